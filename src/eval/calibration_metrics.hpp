#pragma once
// How calibrated probabilities are: accuracy, log loss, Brier score and expected calibration
// error over 10 equal-width bins of the top option's probability (Naeini et al. 2015; Guo et al.
// 2017), with the bins for a reliability diagram.

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace clef::eval {

/// One scored question: its probabilities and the gold option's index.
struct ScoredQuestion {
  std::vector<double> probs;
  std::size_t gold = 0;
};

/// One reliability bin: questions whose top probability falls in [k/10, (k+1)/10).
struct ReliabilityBin {
  std::size_t count = 0;
  double confidence = 0;  ///< mean top probability
  double accuracy = 0;    ///< share whose top option is the gold one
};

struct CalibrationMetrics {
  std::size_t n = 0;
  double accuracy = 0;  ///< top option == gold
  double log_loss = 0;  ///< mean -ln p_gold (p clamped at 1e-12)
  double brier = 0;     ///< mean sum_k (p_k - [k == gold])^2
  double ece = 0;       ///< sum over bins of count/n * |accuracy - confidence|
  std::array<ReliabilityBin, 10> bins{};
};

/// The metrics of `questions` (empty: all zero). The top option is the first largest.
CalibrationMetrics measure(const std::vector<ScoredQuestion>& questions);

/// A reliability diagram as an SVG document: accuracy against confidence per bin for each series
/// (name, metrics), the diagonal of perfect calibration, a legend with each series' ECE.
std::string reliability_svg(const std::string& title,
                            const std::vector<std::pair<std::string, CalibrationMetrics>>& series);

}  // namespace clef::eval
