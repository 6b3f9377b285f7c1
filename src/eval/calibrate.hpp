#pragma once
// `clef calibrate`: decides a user's labeled requests, fits a decision::Calibration on the
// head's logits, and reports accuracy, log loss, Brier score and ECE before and after it, the
// "after" measured on held-out folds (k-fold by request) so it is not measured on what it was
// fitted on.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "decision/calibration.hpp"
#include "eval/calibration_fit.hpp"
#include "eval/calibration_metrics.hpp"
#include "eval/labeled_set.hpp"
#include "json/value.hpp"
#include "runtime/make_engine.hpp"

namespace clef::eval {

struct CalibrateOptions {
  std::size_t folds = 5;               ///< k of the k-fold split (fewer requests: fewer folds)
  std::size_t min_per_question = 100;  ///< a question id gets its own scaling from this many
  std::function<void(std::size_t, std::size_t)> on_request;  ///< (decided, total)
};

/// Before and after, for one question type or all.
struct CalibrationComparison {
  std::string name;  ///< "all", "noul", "choice", "score"
  CalibrationMetrics before;
  CalibrationMetrics after;  ///< held out (in sample when `CalibrateResult::folds` < 2)
};

struct CalibrateResult {
  std::size_t requests = 0;                        ///< labeled requests decided
  std::size_t questions = 0;                       ///< labeled questions used
  std::vector<std::string> skipped;                ///< "line N: why"
  std::size_t folds = 0;                           ///< folds used for "after" (< 2: in sample)
  std::vector<CalibrationComparison> comparisons;  ///< "all" first, then each type present
  decision::Calibration calibration;               ///< fitted on every labeled question
  std::vector<LabeledQuestion> samples;
};

/// Decides every labeled request with `engine` (a request it refuses, or a gold option its
/// record does not have, is skipped and listed after the set's own skipped lines), then fits
/// and measures.
CalibrateResult calibrate(runtime::Engine& engine, const LabeledSet& data,
                          const CalibrateOptions& options);

/// Labeled questions below which a fit says little (a type's temperature, the held-out folds).
inline constexpr std::size_t kFewLabeledQuestions = 30;

/// Why the fitted calibration should not be applied as it is, one sentence each (empty: none):
/// too few labeled questions (fewer than kFewLabeledQuestions, or too few requests for held-out
/// folds), a fitted temperature at its bound (0.05 or 20: the data pushed it as far as it may
/// go), or a held-out log loss worse than without calibration.
std::vector<std::string> calibration_warnings(const CalibrateResult& result);

/// Fits and measures already collected samples (what calibrate() does after deciding).
CalibrateResult calibrate_samples(std::vector<LabeledQuestion> samples,
                                  const CalibrateOptions& options);

/// The terminal report: counts, the table before / after per type, the fitted scalings.
std::string format_calibration_report(const CalibrateResult& result);

/// The same as JSON.
json::Value calibration_report_json(const CalibrateResult& result);

}  // namespace clef::eval
