#include "server/metrics.hpp"

#include <gtest/gtest.h>

namespace clef::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Histogram, BucketsAreCumulativeWithInfSumAndCount) {
  Histogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 2.0, 100.0}) h.observe(v);
  std::string out;
  h.render(out, "x");
  EXPECT_EQ(out,
            "x_bucket{le=\"0.1\"} 2\n"
            "x_bucket{le=\"1\"} 3\n"
            "x_bucket{le=\"10\"} 4\n"
            "x_bucket{le=\"+Inf\"} 5\n"
            "x_sum 102.65\n"
            "x_count 5\n");
  EXPECT_THROW(Histogram({1, 1}), std::logic_error);
}

TEST(Histogram, NumbersUseShortestRoundTripText) {
  EXPECT_EQ(prometheus_number(0.005), "0.005");
  EXPECT_EQ(prometheus_number(30), "30");
  EXPECT_EQ(prometheus_number(1.0 / 0.0), "+Inf");
  EXPECT_EQ(prometheus_number(-1.0 / 0.0), "-Inf");
}

TEST(Metrics, RendersRequestsDecisionsTokensAndGauges) {
  Metrics m;
  m.count_request("/v1/decisions", 200);
  m.count_request("/v1/decisions", 200);
  m.count_request("/v1/decisions", 429);
  m.count_request("other", 404);
  m.observe_decision(0.02, 0.001, 100);
  m.observe_decision(0.2, 0.5, 5000);
  m.count_dropped();
  m.count_cuts(4156, 2);  // a state cut to fit, two ignored fields
  m.count_cuts(0, 1);
  GaugeValues g;
  g.queue_depth = 3;
  g.in_flight = 1;
  g.model_loaded = true;
  g.model_load_seconds = 1.5;
  g.state_cache.hits = 4;
  g.state_cache.prefix_hits = 3;
  g.state_cache.misses = 6;
  g.state_cache.reused_tokens = 1234;
  g.state_cache.evictions = 1;
  g.state_cache.entries = 2;
  g.state_cache.bytes = 4096;
  g.state_cache.budget = 1 << 20;
  std::string text = m.render(g);
  EXPECT_TRUE(has_line(text, "# TYPE clef_http_requests_total counter"));
  EXPECT_TRUE(
      has_line(text, "clef_http_requests_total{endpoint=\"/v1/decisions\",status=\"200\"} 2"));
  EXPECT_TRUE(
      has_line(text, "clef_http_requests_total{endpoint=\"/v1/decisions\",status=\"429\"} 1"));
  EXPECT_TRUE(has_line(text, "clef_http_requests_total{endpoint=\"other\",status=\"404\"} 1"));
  EXPECT_TRUE(has_line(text, "# TYPE clef_decision_duration_seconds histogram"));
  EXPECT_TRUE(has_line(text, "clef_decision_duration_seconds_bucket{le=\"0.025\"} 1"));
  EXPECT_TRUE(has_line(text, "clef_decision_duration_seconds_bucket{le=\"0.25\"} 2"));
  EXPECT_TRUE(has_line(text, "clef_decision_duration_seconds_count 2"));
  EXPECT_TRUE(has_line(text, "clef_queue_wait_seconds_bucket{le=\"0.001\"} 1"));
  EXPECT_TRUE(has_line(text, "clef_input_tokens_total 5100"));
  EXPECT_TRUE(has_line(text, "clef_input_tokens_bucket{le=\"256\"} 1"));
  EXPECT_TRUE(has_line(text, "clef_input_tokens_bucket{le=\"16384\"} 2"));
  EXPECT_TRUE(has_line(text, "clef_input_tokens_sum 5100"));
  EXPECT_TRUE(has_line(text, "clef_decisions_dropped_total 1"));
  EXPECT_TRUE(has_line(text, "# TYPE clef_truncated_decisions_total counter"));
  EXPECT_TRUE(has_line(text, "clef_truncated_decisions_total 1"));
  EXPECT_TRUE(has_line(text, "clef_truncated_state_tokens_total 4156"));
  EXPECT_TRUE(has_line(text, "clef_ignored_fields_total 3"));
  EXPECT_TRUE(has_line(text, "clef_queue_depth 3"));
  EXPECT_TRUE(has_line(text, "clef_decisions_in_flight 1"));
  EXPECT_TRUE(has_line(text, "clef_model_loaded 1"));
  EXPECT_TRUE(has_line(text, "clef_model_load_seconds 1.5"));
  EXPECT_TRUE(has_line(text, "# TYPE clef_state_cache_hits_total counter"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_hits_total 4"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_prefix_hits_total 3"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_misses_total 6"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_reused_tokens_total 1234"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_evictions_total 1"));
  EXPECT_TRUE(has_line(text, "# TYPE clef_state_cache_entries gauge"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_entries 2"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_bytes 4096"));
  EXPECT_TRUE(has_line(text, "clef_state_cache_budget_bytes 1048576"));
  // Every sample line is "name[{labels}] value"; every metric has HELP and TYPE.
  std::size_t types = 0;
  std::size_t helps = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "text must end with a newline";
    std::string line = text.substr(start, end - start);
    if (line.rfind("# TYPE ", 0) == 0)
      ++types;
    else if (line.rfind("# HELP ", 0) == 0)
      ++helps;
    else
      EXPECT_NE(line.rfind(' '), std::string::npos) << line;
    start = end + 1;
  }
  EXPECT_EQ(types, 21u);  // 18, and the three of issue 45 (truncation, ignored fields)
  EXPECT_EQ(helps, types);
}

}  // namespace
}  // namespace clef::server
