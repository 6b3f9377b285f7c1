#include "server/metrics.hpp"

#include <stdexcept>

#include <cmath>

#include <charconv>

#include <algorithm>

namespace clef::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end()) {
    throw std::logic_error("histogram bounds must increase");
  }
}

void Histogram::observe(double value) {
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += value;
}

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, result.ptr);
}

void Histogram::render(std::string& out, std::string_view name) const {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? prometheus_number(bounds_[i]) : "+Inf";
    out.append(name).append("_bucket{le=\"").append(le).append("\"} ");
    out.append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_sum ").append(prometheus_number(sum_)).append("\n");
  out.append(name).append("_count ").append(std::to_string(count_)).append("\n");
}

namespace {

std::vector<double> latency_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::vector<double> token_bounds() {
  return {16, 64, 256, 1024, 4096, 16384, 65536, 262144};
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, const char* name, const std::string& value) {
  out.append(name).append(" ").append(value).append("\n");
}

/// Escapes a label value (\\, \", \n) as the exposition format requires.
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out.append("\\n");
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

Metrics::Metrics()
    : decision_seconds_(latency_bounds()),
      queue_wait_seconds_(latency_bounds()),
      input_tokens_(token_bounds()) {}

void Metrics::count_request(std::string_view endpoint, int status, std::string_view key_name) {
  std::lock_guard lock(mutex_);
  ++requests_[{std::string(endpoint), status}];
  if (!key_name.empty()) {
    KeyCounts& counts = keys_[std::string(key_name)];
    if (status >= 400) ++counts.refusals;
  }
}

void Metrics::observe_decision(double decision_seconds, double queue_wait_seconds, int input_tokens,
                               std::string_view key_name) {
  std::lock_guard lock(mutex_);
  if (!key_name.empty()) {
    KeyCounts& counts = keys_[std::string(key_name)];
    ++counts.decisions;
    counts.input_tokens += static_cast<std::uint64_t>(input_tokens < 0 ? 0 : input_tokens);
  }
  decision_seconds_.observe(decision_seconds);
  queue_wait_seconds_.observe(queue_wait_seconds);
  input_tokens_.observe(input_tokens);
  input_tokens_total_ += static_cast<std::uint64_t>(input_tokens < 0 ? 0 : input_tokens);
}

void Metrics::count_dropped() {
  std::lock_guard lock(mutex_);
  ++dropped_;
}

void Metrics::count_cuts(int truncated_tokens, std::size_t ignored_fields) {
  std::lock_guard lock(mutex_);
  if (truncated_tokens > 0) {
    ++truncated_decisions_;
    truncated_tokens_ += static_cast<std::uint64_t>(truncated_tokens);
  }
  ignored_fields_ += ignored_fields;
}

std::string Metrics::render(const GaugeValues& gauges) const {
  std::lock_guard lock(mutex_);
  std::string out;
  header(out, "clef_http_requests_total", "counter",
         "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, count] : requests_) {
    out.append("clef_http_requests_total{endpoint=\"").append(label_value(key.first));
    out.append("\",status=\"").append(std::to_string(key.second)).append("\"} ");
    out.append(std::to_string(count)).append("\n");
  }
  header(out, "clef_decision_duration_seconds", "histogram",
         "Time the runtime thread spent on one decision.");
  decision_seconds_.render(out, "clef_decision_duration_seconds");
  header(out, "clef_queue_wait_seconds", "histogram",
         "Time a decision waited in the queue before the runtime thread took it.");
  queue_wait_seconds_.render(out, "clef_queue_wait_seconds");
  header(out, "clef_input_tokens_total", "counter", "Input tokens of decided requests.");
  sample(out, "clef_input_tokens_total", std::to_string(input_tokens_total_));
  header(out, "clef_input_tokens", "histogram", "Input tokens per decided request.");
  input_tokens_.render(out, "clef_input_tokens");
  header(out, "clef_decisions_dropped_total", "counter",
         "Decisions dropped (before their turn) or cancelled (while running) because the client "
         "went away.");
  sample(out, "clef_decisions_dropped_total", std::to_string(dropped_));
  header(out, "clef_truncated_decisions_total", "counter",
         "Decided requests whose state was cut to fit the context (or their max_length / "
         "max_state_tokens); the response said so in X-Clef-Truncated-Tokens.");
  sample(out, "clef_truncated_decisions_total", std::to_string(truncated_decisions_));
  header(out, "clef_truncated_state_tokens_total", "counter",
         "State tokens cut from the end of decided requests' states.");
  sample(out, "clef_truncated_state_tokens_total", std::to_string(truncated_tokens_));
  header(
      out, "clef_ignored_fields_total", "counter",
      "Request fields the contract does not know, accepted and ignored (X-Clef-Ignored-Fields).");
  sample(out, "clef_ignored_fields_total", std::to_string(ignored_fields_));
  header(out, "clef_queue_depth", "gauge", "Decisions waiting for the runtime thread.");
  sample(out, "clef_queue_depth", std::to_string(gauges.queue_depth));
  header(out, "clef_decisions_in_flight", "gauge", "Decisions being computed now.");
  sample(out, "clef_decisions_in_flight", std::to_string(gauges.in_flight));
  header(out, "clef_model_loaded", "gauge", "1 once the model is loaded and warmed up.");
  sample(out, "clef_model_loaded", gauges.model_loaded ? "1" : "0");
  header(out, "clef_model_load_seconds", "gauge",
         "Wall time of model load and warm-up decision (0 until done).");
  sample(out, "clef_model_load_seconds", prometheus_number(gauges.model_load_seconds));
  const cache::StateCacheStats& c = gauges.state_cache;
  const std::pair<const char*, const char*> cache_help[] = {
      {"clef_state_cache_hits_total", "Decisions that resumed from a cached prefix."},
      {"clef_state_cache_prefix_hits_total",
       "Of those, decisions that resumed only the fixed system prefix (no state reused)."},
      {"clef_state_cache_misses_total", "Decisions that found no cached prefix."},
      {"clef_state_cache_reused_tokens_total", "Tokens resumed from the state cache."},
      {"clef_state_cache_evictions_total", "Cached prefixes dropped to stay within the budget."},
      {"clef_state_cache_entries", "Cached prefixes held now."},
      {"clef_state_cache_bytes", "Bytes the state cache holds now."},
      {"clef_state_cache_budget_bytes", "Bytes the state cache may hold (0: off)."}};
  const std::uint64_t cache_values[] = {c.hits,      c.prefix_hits, c.misses, c.reused_tokens,
                                        c.evictions, c.entries,     c.bytes,  c.budget};
  for (std::size_t i = 0; i < std::size(cache_help); ++i) {
    const char* name = cache_help[i].first;
    header(out, name, std::string_view(name).ends_with("_total") ? "counter" : "gauge",
           cache_help[i].second);
    sample(out, name, std::to_string(cache_values[i]));
  }
  if (keys_.empty()) return out;
  const std::pair<const char*, const char*> key_help[] = {
      {"clef_api_key_decisions_total", "Decisions answered, by API key name."},
      {"clef_api_key_input_tokens_total", "Input tokens of decided requests, by API key name."},
      {"clef_api_key_refusals_total",
       "Requests answered with a status >= 400 although their key was accepted, by API key "
       "name."}};
  for (std::size_t i = 0; i < std::size(key_help); ++i) {
    header(out, key_help[i].first, "counter", key_help[i].second);
    for (const auto& [name, counts] : keys_) {
      const std::uint64_t value = i == 0   ? counts.decisions
                                  : i == 1 ? counts.input_tokens
                                           : counts.refusals;
      out.append(key_help[i].first).append("{key=\"").append(label_value(name)).append("\"} ");
      out.append(std::to_string(value)).append("\n");
    }
  }
  return out;
}

}  // namespace clef::server
