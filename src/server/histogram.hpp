#pragma once
// A Prometheus histogram: fixed bucket upper bounds, counts, sum. Not thread-safe (Metrics
// guards it).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clef::server {

class Histogram {
 public:
  /// `bounds`: increasing finite upper bounds; a +Inf bucket is implied.
  explicit Histogram(std::vector<double> bounds);

  /// Counts `value` in the first bucket whose bound is >= value (Prometheus `le`).
  void observe(double value);

  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }

  /// Appends the `<name>_bucket{le=...}` (cumulative), `<name>_sum` and `<name>_count` lines
  /// (text exposition format 0.0.4). HELP/TYPE lines are the caller's.
  void render(std::string& out, std::string_view name) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  ///< per bucket, not cumulative; last is +Inf
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

/// Shortest round-trip decimal text of `v` ("0.005", "1", "2.5e-05"), "+Inf"/"-Inf"/"NaN" as
/// Prometheus spells them.
std::string prometheus_number(double v);

}  // namespace clef::server
