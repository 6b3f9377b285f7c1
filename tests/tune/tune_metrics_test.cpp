// The validation metrics of `clef tune` on hand-computed cases.
#include "tune/tune_metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace clef::tune {
namespace {

TEST(TuneMetrics, BrierLogLossAccuracyAndConfidentlyWrong) {
  const std::vector<ScoredLabel> labels = {
      {"q", {0.7, 0.3}, {1, 0}},                // right
      {"q", {0.95, 0.05}, {0, 1}},              // confidently wrong
      {"r", {0.2, 0.5, 0.3}, {0.2, 0.6, 0.2}},  // soft: Brier and log loss only
  };
  const TuneMetrics m = measure(labels);
  EXPECT_EQ(m.questions, 3u);
  const double brier = (0.09 + 0.09) + (0.9025 + 0.9025) + (0.0 + 0.01 + 0.01);
  EXPECT_NEAR(m.brier, brier / 3, 1e-12);
  const double log_loss = -std::log(0.7) - std::log(0.05) -
                          (0.2 * std::log(0.2) + 0.6 * std::log(0.5) + 0.2 * std::log(0.3));
  EXPECT_NEAR(m.log_loss, log_loss / 3, 1e-12);
  EXPECT_EQ(m.single_answer, 2u);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.5);
  EXPECT_DOUBLE_EQ(m.confidently_wrong, 0.5);
}

TEST(TuneMetrics, CollapseIsOneAnswerWhateverTheRecordSays) {
  // "q": the head answers option 0 for all three records, whose gold differ: collapsed.
  // "r": 9 of 10 the same: near collapse only. "s": gold always the same: not counted.
  std::vector<ScoredLabel> labels = {
      {"q", {0.6, 0.4}, {1, 0}}, {"q", {0.6, 0.4}, {0, 1}}, {"q", {0.7, 0.3}, {0, 1}}};
  for (int i = 0; i < 10; ++i) {
    labels.push_back({"r", i == 0 ? std::vector<double>{0.1, 0.9} : std::vector<double>{0.9, 0.1},
                      i % 2 == 0 ? std::vector<double>{1, 0} : std::vector<double>{0, 1}});
  }
  labels.push_back({"s", {0.9, 0.1}, {1, 0}});
  labels.push_back({"s", {0.9, 0.1}, {1, 0}});
  const TuneMetrics m = measure(labels);
  EXPECT_EQ(m.collapse_ids, 2u);
  EXPECT_DOUBLE_EQ(m.collapse, 0.5);
  EXPECT_DOUBLE_EQ(m.near_collapse, 1.0);
  const auto by = measure_by_question(labels);
  ASSERT_EQ(by.size(), 4u);
  EXPECT_EQ(by[0].first, "all");
  EXPECT_EQ(by[1].first, "q");
  EXPECT_DOUBLE_EQ(by[1].second.collapse, 1.0);
  EXPECT_EQ(by[3].second.collapse_ids, 0u);
}

TEST(TuneMetrics, EmptyIsZero) {
  const TuneMetrics m = measure({});
  EXPECT_EQ(m.questions, 0u);
  EXPECT_EQ(m.brier, 0.0);
}

}  // namespace
}  // namespace clef::tune
