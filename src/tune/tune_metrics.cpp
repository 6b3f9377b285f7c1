#include "tune/tune_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "eval/calibration_metrics.hpp"

namespace clef::tune {
namespace {

std::size_t top_of(const std::vector<double>& v) {
  return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

bool one_hot(const std::vector<double>& t) {
  return std::count(t.begin(), t.end(), 1.0) == 1 &&
         std::count(t.begin(), t.end(), 0.0) == static_cast<std::ptrdiff_t>(t.size()) - 1;
}

}  // namespace

TuneMetrics measure(const std::vector<ScoredLabel>& labels) {
  TuneMetrics m;
  m.questions = labels.size();
  if (labels.empty()) return m;
  std::vector<eval::ScoredQuestion> single;
  std::size_t wrong_and_sure = 0;
  for (const ScoredLabel& l : labels) {
    double brier = 0;
    double log_loss = 0;
    for (std::size_t k = 0; k < l.probs.size(); ++k) {
      brier += (l.probs[k] - l.target[k]) * (l.probs[k] - l.target[k]);
      if (l.target[k] > 0) log_loss -= l.target[k] * std::log(std::max(l.probs[k], 1e-12));
    }
    m.brier += brier;
    m.log_loss += log_loss;
    if (one_hot(l.target)) {
      const std::size_t gold = top_of(l.target);
      single.push_back({l.probs, gold});
      const std::size_t top = top_of(l.probs);
      if (top != gold && l.probs[top] >= kConfidentlyWrong) ++wrong_and_sure;
    }
  }
  const auto n = static_cast<double>(labels.size());
  m.brier /= n;
  m.log_loss /= n;
  m.single_answer = single.size();
  if (!single.empty()) {
    const eval::CalibrationMetrics c = eval::measure(single);
    m.accuracy = c.accuracy;
    m.ece = c.ece;
    m.confidently_wrong = static_cast<double>(wrong_and_sure) / static_cast<double>(single.size());
  }

  // Collapse, per question id: the head's top option against the targets' top options.
  std::map<std::string, std::vector<const ScoredLabel*>> by_id;
  for (const ScoredLabel& l : labels) by_id[l.question].push_back(&l);
  std::size_t collapsed = 0;
  std::size_t nearly = 0;
  for (const auto& [id, ls] : by_id) {
    if (ls.size() < 2) continue;
    std::map<std::size_t, std::size_t> predicted;
    std::map<std::size_t, std::size_t> wanted;
    for (const ScoredLabel* l : ls) {
      ++predicted[top_of(l->probs)];
      ++wanted[top_of(l->target)];
    }
    if (wanted.size() < 2) continue;
    ++m.collapse_ids;
    std::size_t most = 0;
    for (const auto& [option, count] : predicted) most = std::max(most, count);
    if (most == ls.size()) ++collapsed;
    if (static_cast<double>(most) >= 0.9 * static_cast<double>(ls.size())) ++nearly;
  }
  if (m.collapse_ids > 0) {
    m.collapse = static_cast<double>(collapsed) / static_cast<double>(m.collapse_ids);
    m.near_collapse = static_cast<double>(nearly) / static_cast<double>(m.collapse_ids);
  }
  return m;
}

std::vector<std::pair<std::string, TuneMetrics>> measure_by_question(
    const std::vector<ScoredLabel>& labels) {
  std::vector<std::pair<std::string, TuneMetrics>> out;
  out.emplace_back("all", measure(labels));
  std::map<std::string, std::vector<ScoredLabel>> by_id;
  for (const ScoredLabel& l : labels) by_id[l.question].push_back(l);
  for (const auto& [id, ls] : by_id) out.emplace_back(id, measure(ls));
  return out;
}

json::Value metrics_json(const TuneMetrics& m) {
  using json::Value;
  return Value::object({
      {"questions", Value::integer(static_cast<std::int64_t>(m.questions))},
      {"brier", Value::floating(m.brier)},
      {"log_loss", Value::floating(m.log_loss)},
      {"single_answer", Value::integer(static_cast<std::int64_t>(m.single_answer))},
      {"accuracy", Value::floating(m.accuracy)},
      {"ece", Value::floating(m.ece)},
      {"confidently_wrong", Value::floating(m.confidently_wrong)},
      {"collapse", Value::floating(m.collapse)},
      {"near_collapse", Value::floating(m.near_collapse)},
  });
}

}  // namespace clef::tune
