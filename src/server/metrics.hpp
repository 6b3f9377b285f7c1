#pragma once
// The server's Prometheus metrics (GET /metrics, text exposition format 0.0.4).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <vector>

#include "cache/state_cache.hpp"

namespace clef::server {

/// A Prometheus histogram: fixed bucket upper bounds, counts, sum. Not thread-safe (Metrics
/// guards it).
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

/// Values read at scrape time from the decision queue.
struct GaugeValues {
  std::size_t queue_depth = 0;         ///< decisions waiting for the runtime thread
  int in_flight = 0;                   ///< decisions being computed now (0 or 1)
  bool model_loaded = false;           ///< the model is loaded and warmed up
  double model_load_seconds = 0;       ///< load + warm-up wall time (0 before it finished)
  cache::StateCacheStats state_cache;  ///< the runner's state cache
};

/// Counters and histograms updated by the HTTP threads. Thread-safe.
///   clef_http_requests_total{endpoint,status}   counter
///   clef_decision_duration_seconds              histogram (runtime thread time per decision)
///   clef_queue_wait_seconds                     histogram (submit -> decision start)
///   clef_input_tokens_total                     counter
///   clef_input_tokens                           histogram (tokens per decided request)
///   clef_state_cache_{hits,misses,reused_tokens,evictions}_total  counters
///   clef_state_cache_{entries,bytes,budget_bytes}                 gauges
///   clef_decisions_dropped_total                counter (client gone before its turn)
///   clef_truncated_decisions_total, clef_truncated_state_tokens_total  counters (states cut to
///   fit) clef_ignored_fields_total                   counter (unknown request fields accepted)
///   clef_queue_depth, clef_decisions_in_flight, clef_model_loaded, clef_model_load_seconds gauges
///   clef_api_key_{decisions,input_tokens,refusals}_total{key}  counters, per API key name (only
///                                               when the server checks keys)
class Metrics {
 public:
  Metrics();

  /// Counts one answered request. `endpoint` should be a known path or "other" (bounded labels);
  /// `key_name`: the API key it came with ("" when none was checked), a refusal (status >= 400)
  /// is counted under it.
  void count_request(std::string_view endpoint, int status, std::string_view key_name = {});
  /// Records one decision the runtime thread computed, for the API key `key_name` ("": none).
  void observe_decision(double decision_seconds, double queue_wait_seconds, int input_tokens,
                        std::string_view key_name = {});
  /// Counts one request dropped because its client went away.
  void count_dropped();
  /// Counts a decided request whose state lost `tokens` (> 0) tokens to fit, and the unknown
  /// fields it carried.
  void count_cuts(int truncated_tokens, std::size_t ignored_fields);

  /// The whole exposition text with `gauges` filled in.
  std::string render(const GaugeValues& gauges) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  Histogram decision_seconds_;
  Histogram queue_wait_seconds_;
  Histogram input_tokens_;
  std::uint64_t input_tokens_total_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t truncated_decisions_ = 0;
  std::uint64_t truncated_tokens_ = 0;
  std::uint64_t ignored_fields_ = 0;
  struct KeyCounts {
    std::uint64_t decisions = 0;
    std::uint64_t input_tokens = 0;
    std::uint64_t refusals = 0;
  };
  /// Per API key name; names come from the server's own key list (bounded labels).
  std::map<std::string, KeyCounts, std::less<>> keys_;
};

}  // namespace clef::server
