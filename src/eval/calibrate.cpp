#include "eval/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/error.hpp"

namespace clef::eval {
namespace {

std::vector<ScoredQuestion> scored(const std::vector<const LabeledQuestion*>& samples,
                                   const decision::Calibration* calibration) {
  std::vector<ScoredQuestion> out;
  for (const LabeledQuestion* q : samples) out.push_back({probabilities(*q, calibration), q->gold});
  return out;
}

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

json::Value metrics_json(const CalibrationMetrics& m) {
  std::vector<json::Value> bins;
  for (const ReliabilityBin& b : m.bins) {
    bins.push_back(
        json::Value::object({{"count", json::Value::integer(static_cast<std::int64_t>(b.count))},
                             {"confidence", json::Value::floating(b.confidence)},
                             {"accuracy", json::Value::floating(b.accuracy)}}));
  }
  return json::Value::object({{"n", json::Value::integer(static_cast<std::int64_t>(m.n))},
                              {"accuracy", json::Value::floating(m.accuracy)},
                              {"log_loss", json::Value::floating(m.log_loss)},
                              {"brier", json::Value::floating(m.brier)},
                              {"ece", json::Value::floating(m.ece)},
                              {"bins", json::Value::array(std::move(bins))}});
}

}  // namespace

CalibrateResult calibrate_samples(std::vector<LabeledQuestion> samples,
                                  const CalibrateOptions& options) {
  CalibrateResult out;
  out.questions = samples.size();
  int groups = 0;
  for (const LabeledQuestion& q : samples) groups = std::max(groups, q.group + 1);
  out.folds = std::min<std::size_t>(options.folds, static_cast<std::size_t>(groups));
  out.calibration = fit_calibration(samples, options.min_per_question);

  // "after": each fold scored by a calibration fitted on the other folds.
  std::vector<ScoredQuestion> after(samples.size());
  if (out.folds >= 2) {
    for (std::size_t f = 0; f < out.folds; ++f) {
      std::vector<LabeledQuestion> train;
      for (const LabeledQuestion& q : samples) {
        if (static_cast<std::size_t>(q.group) % out.folds != f) train.push_back(q);
      }
      const decision::Calibration fold = fit_calibration(train, options.min_per_question);
      for (std::size_t i = 0; i < samples.size(); ++i) {
        if (static_cast<std::size_t>(samples[i].group) % out.folds == f) {
          after[i] = {probabilities(samples[i], &fold), samples[i].gold};
        }
      }
    }
  } else {
    for (std::size_t i = 0; i < samples.size(); ++i) {
      after[i] = {probabilities(samples[i], &out.calibration), samples[i].gold};
    }
  }
  auto compare = [&](const std::string& name, auto keep) {
    std::vector<const LabeledQuestion*> chosen;
    std::vector<ScoredQuestion> held_out;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (!keep(samples[i])) continue;
      chosen.push_back(&samples[i]);
      held_out.push_back(after[i]);
    }
    if (chosen.empty()) return;
    out.comparisons.push_back({name, measure(scored(chosen, nullptr)), measure(held_out)});
  };
  compare("all", [](const LabeledQuestion&) { return true; });
  for (int t = 0; t < 3; ++t) {
    const auto type = static_cast<request::QuestionType>(t);
    compare(request::type_name(type), [type](const LabeledQuestion& q) { return q.type == type; });
  }
  out.samples = std::move(samples);
  return out;
}

CalibrateResult calibrate(runtime::Engine& engine, const LabeledSet& set,
                          const CalibrateOptions& options) {
  const std::vector<LabeledRequest>& data = set.requests;
  std::vector<LabeledQuestion> samples;
  std::vector<std::string> skipped = set.skipped;
  std::size_t decided = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const LabeledRequest& r = data[i];
    const std::string where = "line " + std::to_string(r.line);
    try {
      const runtime::PreparedRequest prepared = engine.prepare(r.request);
      std::vector<LabeledQuestion> mine;
      for (const auto& [question, option] : r.gold) {
        const auto& qs = prepared.record.questions;
        const auto q = std::find_if(qs.begin(), qs.end(),
                                    [&](const auto& x) { return x.question_id == question; });
        if (q == qs.end())
          throw invalid_request("gold names question \"" + question +
                                "\" that the request does not ask");
        const auto o = std::find(q->option_ids.begin(), q->option_ids.end(), option);
        if (o == q->option_ids.end()) {
          throw invalid_request("gold." + question + " is \"" + option +
                                "\", not an option of that question");
        }
        LabeledQuestion lq;
        lq.type = q->type;
        lq.question_id = question;
        lq.gold = static_cast<std::size_t>(o - q->option_ids.begin());
        lq.group = static_cast<int>(decided);
        mine.push_back(std::move(lq));
      }
      if (mine.empty()) throw invalid_request("no labeled question");
      const runtime::Decision d = engine.decide(prepared);
      for (LabeledQuestion& lq : mine) {
        const auto k = static_cast<std::size_t>(
            std::find_if(prepared.record.questions.begin(), prepared.record.questions.end(),
                         [&](const auto& x) { return x.question_id == lq.question_id; }) -
            prepared.record.questions.begin());
        lq.logits.assign(d.logits.at(k).begin(), d.logits.at(k).end());
        samples.push_back(std::move(lq));
      }
      ++decided;
    } catch (const Error& e) {
      skipped.push_back(where + ": " + e.what());
    }
    if (options.on_request) options.on_request(i + 1, data.size());
  }
  // By line: those skipped when read, then those skipped once decided, in one order.
  const auto line_of = [](const std::string& s) {
    return s.starts_with("line ") ? std::atol(s.c_str() + 5) : 0L;
  };
  std::stable_sort(skipped.begin(), skipped.end(), [&](const std::string& a, const std::string& b) {
    return line_of(a) < line_of(b);
  });
  CalibrateResult out = calibrate_samples(std::move(samples), options);
  out.requests = decided;
  out.skipped = std::move(skipped);
  return out;
}

std::string format_calibration_report(const CalibrateResult& r) {
  std::string out = "clef calibrate: " + std::to_string(r.requests) + " requests, " +
                    std::to_string(r.questions) + " labeled questions";
  if (!r.skipped.empty()) out += ", " + std::to_string(r.skipped.size()) + " skipped";
  out += "\n";
  for (const std::string& s : r.skipped) out += "skipped " + s + "\n";
  out += r.folds >= 2 ? "after: measured on " + std::to_string(r.folds) +
                            " held-out folds (each scored by a calibration fitted on the others)\n"
                      : "after: IN SAMPLE (too few requests for held-out folds)\n";
  out += '\n';
  out += pad("", 9) + pad("n", 6) + pad("accuracy", 19) + pad("log loss", 19) + pad("Brier", 19) +
         "ECE (10 bins)\n";
  out += pad("", 15) + pad("before  after", 19) + pad("before  after", 19) +
         pad("before  after", 19) + "before  after\n";
  for (const CalibrationComparison& c : r.comparisons) {
    out += pad(c.name, 9) + pad(std::to_string(c.before.n), 6);
    out += pad(fixed(c.before.accuracy, 4) + "  " + fixed(c.after.accuracy, 4), 19);
    out += pad(fixed(c.before.log_loss, 4) + "  " + fixed(c.after.log_loss, 4), 19);
    out += pad(fixed(c.before.brier, 4) + "  " + fixed(c.after.brier, 4), 19);
    out += fixed(c.before.ece, 4) + "  " + fixed(c.after.ece, 4) + "\n";
  }
  out += "\nfitted on all labeled questions:\n";
  for (int t = 0; t < 3; ++t) {
    const auto& s = r.calibration.by_type[static_cast<std::size_t>(t)];
    if (!s) continue;
    out += "  " + pad(request::type_name(static_cast<request::QuestionType>(t)), 8) +
           "temperature " + fixed(s->temperature, 4);
    if (t == 0) out += ", bias " + fixed(s->bias, 4);
    out += " (" + std::to_string(s->examples) + " questions)\n";
  }
  for (const auto& [id, s] : r.calibration.by_question) {
    out += "  question " + id + ": temperature " + fixed(s.temperature, 4) + ", bias " +
           fixed(s.bias, 4) + " (" + std::to_string(s.examples) + ")\n";
  }
  return out;
}

std::vector<std::string> calibration_warnings(const CalibrateResult& r) {
  std::vector<std::string> out;
  if (r.questions < kFewLabeledQuestions || r.folds < 2) {
    out.push_back("too few labels: " + std::to_string(r.questions) + " labeled questions in " +
                  std::to_string(r.requests) + " requests (a fit needs " +
                  std::to_string(kFewLabeledQuestions) +
                  " or more, and 2 or more requests for held-out folds)");
  }
  // The fit searches the temperature within [0.05, 20]; within 0.5% of a bound is at it.
  auto at_bound = [](const decision::Scaling& s) {
    return std::fabs(s.temperature / 0.05 - 1.0) < 5e-3 ||
           std::fabs(s.temperature / 20.0 - 1.0) < 5e-3;
  };
  for (int t = 0; t < 3; ++t) {
    const auto& s = r.calibration.by_type[static_cast<std::size_t>(t)];
    if (s && at_bound(*s)) {
      out.push_back(std::string(request::type_name(static_cast<request::QuestionType>(t))) +
                    " temperature " + fixed(s->temperature, 2) +
                    " is at its bound (0.05..20): the labels pushed it as far as it may go");
    }
  }
  for (const auto& [id, s] : r.calibration.by_question) {
    if (at_bound(s)) {
      out.push_back("question " + id + " temperature " + fixed(s.temperature, 2) +
                    " is at its bound (0.05..20)");
    }
  }
  if (!r.comparisons.empty() && r.folds >= 2 &&
      r.comparisons.front().after.log_loss > r.comparisons.front().before.log_loss) {
    out.push_back("on held-out folds the calibration scores worse than none (log loss " +
                  fixed(r.comparisons.front().before.log_loss, 4) + " -> " +
                  fixed(r.comparisons.front().after.log_loss, 4) + ")");
  }
  return out;
}

json::Value calibration_report_json(const CalibrateResult& r) {
  std::vector<json::Value> comparisons;
  for (const CalibrationComparison& c : r.comparisons) {
    comparisons.push_back(json::Value::object({{"name", json::Value::string(c.name)},
                                               {"before", metrics_json(c.before)},
                                               {"after", metrics_json(c.after)}}));
  }
  std::vector<json::Value> skipped;
  for (const std::string& s : r.skipped) skipped.push_back(json::Value::string(s));
  return json::Value::object(
      {{"requests", json::Value::integer(static_cast<std::int64_t>(r.requests))},
       {"questions", json::Value::integer(static_cast<std::int64_t>(r.questions))},
       {"folds", json::Value::integer(static_cast<std::int64_t>(r.folds))},
       {"held_out", json::Value::boolean(r.folds >= 2)},
       {"comparisons", json::Value::array(std::move(comparisons))},
       {"calibration", r.calibration.to_json()},
       {"skipped", json::Value::array(std::move(skipped))}});
}

}  // namespace clef::eval
