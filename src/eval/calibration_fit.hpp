#pragma once
// Fitting a decision::Calibration by maximum likelihood on labeled questions: a temperature per
// question type (choice, score: NLL of softmax(logits / T), minimized over log T by golden-section
// search, NLL being unimodal in it), Platt scaling for noul (logistic regression of the gold on
// the true-vs-false logit difference: p = sigmoid(a d + b), Newton's method; T = 1 / a), and per
// question id where it has at least `min_per_question` examples.

#include <cstddef>
#include <string>
#include <vector>

#include "decision/calibration.hpp"
#include "request/request.hpp"

namespace clef::eval {

/// One labeled question: the head's logits (model order) and the gold option's index in them.
struct LabeledQuestion {
  request::QuestionType type = request::QuestionType::choice;
  std::string question_id;
  std::vector<double> logits;
  std::size_t gold = 0;
  int group = 0;  ///< the request it came from (cross-validation folds keep a request together)
};

/// The temperature minimizing the NLL of `samples` (any types), in [0.05, 20]; 1 when empty.
double fit_temperature(const std::vector<const LabeledQuestion*>& samples);

/// Platt scaling of noul samples (option 0 = "true"): {temperature = 1/a, bias = b}; {1, 0} when
/// empty or when the labels are all one class.
decision::Scaling fit_platt(const std::vector<const LabeledQuestion*>& samples);

/// A calibration fitted on `samples`: every type that has samples, and every question id with at
/// least `min_per_question` of them.
decision::Calibration fit_calibration(const std::vector<LabeledQuestion>& samples,
                                      std::size_t min_per_question);

/// `sample`'s probabilities under `calibration` (null: as the reference computes them), in double.
std::vector<double> probabilities(const LabeledQuestion& sample,
                                  const decision::Calibration* calibration);

}  // namespace clef::eval
