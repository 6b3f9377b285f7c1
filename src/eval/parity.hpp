#pragma once
// Parity of one engine's decisions with the reference's, run by run, and its summary: the gate
// published ports report (argmax agreement where the reference's top-2 margin is above 0.02, max
// |Δp|, mean |Δp|), per arm and per source, with the worst runs named.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval/fixture.hpp"

namespace clef::eval {

/// What the engine gave for one question: option ids (model order) and their probabilities.
struct ObservedQuestion {
  std::string id;
  record::Span question_span;
  std::vector<record::Span> option_spans;
  std::vector<std::string> option_ids;
  std::vector<double> probs;
};

/// What the engine gave for one run.
struct ObservedRun {
  std::vector<std::int32_t> ids;
  std::vector<ObservedQuestion> questions;
};

/// One question compared.
struct QuestionParity {
  std::string id;
  double max_dp = 0;         ///< max over options of |p - p_ref|
  double mean_dp = 0;        ///< mean over options of |p - p_ref|
  bool argmax_equal = true;  ///< the same option is the most probable
  double ref_margin = 0;     ///< the reference's top-2 margin
  bool near_tie = false;     ///< the reference's own near-tie mark
};

/// One run compared (or why not).
struct RunParity {
  enum class Status { compared, skipped, failed };
  std::string id;
  std::string arm;
  std::string source;
  Status status = Status::compared;
  std::string note;                 ///< why skipped or failed; what differs
  std::optional<bool> ids_equal;    ///< unset when not compared (withheld ids, other vocabulary)
  std::optional<bool> spans_equal;  ///< unset when not compared
  std::vector<QuestionParity> questions;
  double max_dp = 0;   ///< over its questions
  double mean_dp = 0;  ///< mean over its questions' options
};

/// The bar a verification passes.
struct ParityBar {
  double max_dp = 0.02;      ///< every |Δp| at most this
  double mean_dp = 0.002;    ///< the mean over runs of each run's mean |Δp| at most this
  double margin = 0.02;      ///< questions whose reference top-2 margin is above it ...
  double argmax_rate = 1.0;  ///< ... agree on the argmax at least this often
};

/// Totals over a set of runs.
struct ParityTally {
  int runs = 0;  ///< compared
  int skipped = 0;
  int failed = 0;
  int ids_checked = 0;
  int ids_equal = 0;
  int spans_checked = 0;
  int spans_equal = 0;
  int above_margin = 0;  ///< questions with reference margin above the bar's margin
  int above_margin_agree = 0;
  int near_ties = 0;
  int near_ties_agree = 0;
  double max_dp = 0;
  std::string max_dp_run;  ///< "id/arm"
  double mean_dp = 0;      ///< mean over compared runs of their mean |Δp|
};

/// A whole verification.
struct ParitySummary {
  ParityTally all;
  std::map<std::string, ParityTally> by_arm;
  std::map<std::string, ParityTally> by_source;
  std::vector<const RunParity*> worst;  ///< up to 10 compared runs, largest max |Δp| first
  bool pass = false;
  std::vector<std::string> reasons;  ///< why it fails (empty when it passes)
};

/// Compares what the engine gave for `run` with the reference. `compare_ids`: the engine has the
/// reference's vocabulary, so ids and spans must be equal (they are left unset otherwise or when
/// the fixture withholds the ids). Questions are matched by id, options by option id.
RunParity compare_run(const FixtureRun& run, const ObservedRun& observed, bool compare_ids);

/// Totals, per arm and per source, the worst runs and the verdict against `bar`. `runs` must
/// outlive the summary (it points into them).
ParitySummary summarize(const std::vector<RunParity>& runs, const ParityBar& bar);

}  // namespace clef::eval
