#include "decision/answer.hpp"

#include "json/pyfloat.hpp"
#include "util/error.hpp"

namespace clef::decision {
namespace {

using json::Value;

Error internal(std::string message) {
  return Error(ErrorKind::internal, "internal_error", std::move(message));
}

Value rounded(double x) {
  return Value::floating(json::py_round(x, kDecimals));
}

Value noul_answer(std::span<const double> p) {
  return Value::object({{"type", Value::string("noul")}, {"noul", rounded(p[0])}});
}

Value choice_answer(const request::Question& q, std::span<const double> p, ConfidenceKind kind) {
  std::vector<Value::Member> probabilities;
  std::size_t best = q.criteria_order.front();
  for (std::size_t k : q.criteria_order) {
    if (p[k] > p[best]) best = k;
    probabilities.emplace_back(q.options[k].id, rounded(p[k]));
  }
  return Value::object(
      {{"type", Value::string("choice")},
       {"choice", Value::string(q.options[best].id)},
       {"confidence",
        rounded(kind == ConfidenceKind::reference ? p[best] : confidence_of(p, kind))},
       {"probabilities", Value::object(std::move(probabilities))}});
}

Value score_answer(const request::Question& q, std::span<const double> p, ConfidenceKind kind) {
  double score = 0.0;
  double confidence = p[0];
  std::vector<Value::Member> legend;
  std::vector<Value::Member> probabilities;
  for (std::size_t i = 0; i < p.size(); ++i) {
    score += static_cast<double>(i) * p[i];
    if (p[i] > confidence) confidence = p[i];
    legend.emplace_back(q.options[i].id, q.options[i].description);
    probabilities.emplace_back(q.options[i].id, rounded(p[i]));
  }
  return Value::object(
      {{"type", Value::string("score")},
       {"score", rounded(score)},
       {"confidence",
        rounded(kind == ConfidenceKind::reference ? confidence : confidence_of(p, kind))},
       {"legend", Value::object(std::move(legend))},
       {"probabilities", Value::object(std::move(probabilities))}});
}

}  // namespace

Value answer_question(const request::Question& q, std::span<const double> probs,
                      ConfidenceKind confidence) {
  if (probs.size() != q.options.size() || probs.empty()) {
    throw internal("question " + q.id + ": " + std::to_string(probs.size()) +
                   " probabilities for " + std::to_string(q.options.size()) + " options");
  }
  switch (q.type) {
    case request::QuestionType::noul:
      return noul_answer(probs);
    case request::QuestionType::choice:
      return choice_answer(q, probs, confidence);
    case request::QuestionType::score:
      return score_answer(q, probs, confidence);
  }
  throw internal("unknown question type");
}

}  // namespace clef::decision
