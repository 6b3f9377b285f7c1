#pragma once
// Test support: answers of one engine against another's (a device against the CPU), the figures
// of the parity bar: argmax equal where the reference's top-2 margin is above 0.02, max and mean
// |delta p| over every option (the Core AI port's bar: 0.01 / 0.002).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace clef::test {

/// Softmax of one question's option logits (float, as the engine's answers are).
inline std::vector<float> softmax(const std::vector<float>& logits) {
  const float m = *std::max_element(logits.begin(), logits.end());
  std::vector<float> p;
  float sum = 0;
  for (float l : logits) sum += p.emplace_back(std::exp(l - m));
  for (float& v : p) v /= sum;
  return p;
}

/// Running parity figures over questions.
struct Parity {
  double max_dp = 0;
  double sum_dp = 0;
  std::size_t options = 0;
  std::size_t questions = 0;
  std::size_t clear = 0;           ///< questions whose reference top-2 margin is above 0.02
  std::size_t argmax_differs = 0;  ///< of the clear ones

  /// Adds one decision's questions: `reference` and `other` are Decision::logits.
  void add(const std::vector<std::vector<float>>& reference,
           const std::vector<std::vector<float>>& other) {
    for (std::size_t q = 0; q < reference.size() && q < other.size(); ++q) {
      const auto pr = softmax(reference[q]);
      const auto po = softmax(other[q]);
      ++questions;
      for (std::size_t o = 0; o < pr.size() && o < po.size(); ++o) {
        const double d = std::fabs(static_cast<double>(pr[o]) - po[o]);
        max_dp = std::max(max_dp, d);
        sum_dp += d;
        ++options;
      }
      std::vector<float> sorted = pr;
      std::sort(sorted.rbegin(), sorted.rend());
      if (sorted.size() < 2 || sorted[0] - sorted[1] <= 0.02f) continue;
      ++clear;
      if (std::max_element(pr.begin(), pr.end()) - pr.begin() !=
          std::max_element(po.begin(), po.end()) - po.begin()) {
        ++argmax_differs;
      }
    }
  }
  double mean_dp() const { return options == 0 ? 0 : sum_dp / static_cast<double>(options); }
};

}  // namespace clef::test
