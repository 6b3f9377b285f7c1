#pragma once
// How well a head's probabilities fit labeled questions, as `clef tune` reports them before
// training and after every epoch: the recipe's Brier (its loss), single-answer accuracy, log
// loss, ECE, confidently wrong, collapse and near-collapse; for all questions and per question id.

#include <cstddef>
#include <string>
#include <vector>

#include "json/value.hpp"

namespace clef::tune {

/// One labeled question's probabilities and target (same option order).
struct ScoredLabel {
  std::string question;  ///< question id
  std::vector<double> probs;
  std::vector<double> target;  ///< sums to 1; one-hot for a single answer
};

/// Confidence above which a wrong single answer counts as confidently wrong.
inline constexpr double kConfidentlyWrong = 0.9;

struct TuneMetrics {
  std::size_t questions = 0;
  /// Mean over questions of sum_k (p_k - target_k)^2: the recipe's decision_loss per question.
  double brier = 0;
  /// Mean over questions of -sum_k target_k ln max(p_k, 1e-12).
  double log_loss = 0;
  std::size_t single_answer = 0;  ///< questions whose target is one option (a gold label)
  double accuracy = 0;            ///< of those: the top option is the gold one
  double ece = 0;  ///< of those: expected calibration error, 10 bins of the top probability
  /// Of those: the top option is wrong and its probability >= kConfidentlyWrong.
  double confidently_wrong = 0;
  /// Of the question ids with at least 2 records whose targets' top options differ: the share
  /// whose predicted top option is the same for every record (the head answers one option
  /// whatever the record says), and for at least 90% of them (near collapse).
  double collapse = 0;
  double near_collapse = 0;
  std::size_t collapse_ids = 0;  ///< question ids the two shares are over
};

/// The metrics of `labels` (empty: all zero).
TuneMetrics measure(const std::vector<ScoredLabel>& labels);

/// "all" first, then one entry per question id (sorted).
std::vector<std::pair<std::string, TuneMetrics>> measure_by_question(
    const std::vector<ScoredLabel>& labels);

/// {"questions", "brier", "log_loss", "single_answer", "accuracy", "ece", "confidently_wrong",
///  "collapse", "near_collapse"}.
json::Value metrics_json(const TuneMetrics& m);

}  // namespace clef::tune
