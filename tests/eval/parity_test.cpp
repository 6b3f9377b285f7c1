// Parity of observed decisions with a fixture run, and the verdict: equal runs pass, a perturbed
// probability fails with the run named, withheld ids are not compared, the argmax is judged only
// above the margin, and near ties are counted apart.
#include <gtest/gtest.h>

#include "eval/parity.hpp"

namespace clef::eval {
namespace {

FixtureRun run_of(const std::string& id, const std::vector<double>& probs, double margin) {
  FixtureRun r;
  r.id = id;
  r.arm = "text";
  r.source = "own_text";
  r.ids = std::vector<std::int32_t>{1, 2, 3};
  FixtureQuestion q;
  q.id = "q";
  q.type = "choice";
  q.question_span = {1, 2};
  q.option_spans = {{2, 3}, {3, 4}};
  q.option_ids = {"a", "b"};
  q.probs = probs;
  q.logits = {0, 0};
  q.top2_margin = margin;
  r.questions.push_back(q);
  return r;
}

ObservedRun observed_of(const FixtureRun& r, const std::vector<double>& probs) {
  ObservedRun o;
  o.ids = *r.ids;
  ObservedQuestion q;
  q.id = "q";
  q.question_span = r.questions[0].question_span;
  q.option_spans = r.questions[0].option_spans;
  q.option_ids = {"a", "b"};
  q.probs = probs;
  o.questions.push_back(q);
  return o;
}

TEST(Parity, EqualRunsPass) {
  const FixtureRun r = run_of("r1", {0.7, 0.3}, 0.4);
  const RunParity p = compare_run(r, observed_of(r, {0.7, 0.3}), true);
  EXPECT_EQ(p.status, RunParity::Status::compared);
  EXPECT_EQ(p.max_dp, 0.0);
  EXPECT_TRUE(*p.ids_equal);
  EXPECT_TRUE(*p.spans_equal);
  const std::vector<RunParity> runs = {p};
  const ParitySummary s = summarize(runs, ParityBar{});
  EXPECT_TRUE(s.pass);
  EXPECT_EQ(s.all.above_margin, 1);
  EXPECT_EQ(s.all.above_margin_agree, 1);
}

TEST(Parity, APerturbedProbabilityFailsNamingTheRun) {
  const FixtureRun a = run_of("good", {0.7, 0.3}, 0.4);
  const FixtureRun b = run_of("bad", {0.7, 0.3}, 0.4);
  std::vector<RunParity> runs = {compare_run(a, observed_of(a, {0.7, 0.3}), true),
                                 compare_run(b, observed_of(b, {0.65, 0.35}), true)};
  EXPECT_NEAR(runs[1].max_dp, 0.05, 1e-12);
  EXPECT_NEAR(runs[1].mean_dp, 0.05, 1e-12);
  const ParitySummary s = summarize(runs, ParityBar{});
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.all.max_dp_run, "bad/text");
  ASSERT_FALSE(s.worst.empty());
  EXPECT_EQ(s.worst.front()->id, "bad");
  ASSERT_FALSE(s.reasons.empty());
  EXPECT_NE(s.reasons.front().find("bad/text"), std::string::npos) << s.reasons.front();
  EXPECT_NEAR(s.all.mean_dp, 0.025, 1e-12);
  // A looser bar passes it.
  ParityBar loose;
  loose.max_dp = 0.1;
  loose.mean_dp = 0.1;
  EXPECT_TRUE(summarize(runs, loose).pass);
}

TEST(Parity, ArgmaxCountsOnlyAboveTheMarginAndNearTiesApart) {
  FixtureRun close = run_of("close", {0.505, 0.495}, 0.01);
  close.questions[0].near_tie = true;
  const FixtureRun clear = run_of("clear", {0.9, 0.1}, 0.8);
  std::vector<RunParity> runs = {compare_run(close, observed_of(close, {0.49, 0.51}), true),
                                 compare_run(clear, observed_of(clear, {0.9, 0.1}), true)};
  EXPECT_FALSE(runs[0].questions[0].argmax_equal);
  ParityBar bar;
  bar.max_dp = 0.05;
  bar.mean_dp = 0.05;
  const ParitySummary s = summarize(runs, bar);
  EXPECT_EQ(s.all.above_margin, 1);
  EXPECT_EQ(s.all.above_margin_agree, 1);
  EXPECT_EQ(s.all.near_ties, 1);
  EXPECT_EQ(s.all.near_ties_agree, 0);
  EXPECT_TRUE(s.pass) << "a flipped near tie under the margin does not fail the gate";
}

TEST(Parity, WithheldIdsAndOtherVocabulariesAreNotCompared) {
  FixtureRun r = run_of("withheld", {0.7, 0.3}, 0.4);
  r.ids.reset();
  ObservedRun o = observed_of(run_of("x", {0.7, 0.3}, 0.4), {0.7, 0.3});
  EXPECT_FALSE(compare_run(r, o, true).ids_equal.has_value());
  const FixtureRun full = run_of("other_vocab", {0.7, 0.3}, 0.4);
  o.ids = {9, 9, 9};
  const RunParity p = compare_run(full, o, false);
  EXPECT_FALSE(p.ids_equal.has_value());
  EXPECT_FALSE(p.spans_equal.has_value());
  const RunParity strict = compare_run(full, o, true);
  EXPECT_FALSE(*strict.ids_equal);
  const std::vector<RunParity> runs = {strict};
  EXPECT_FALSE(summarize(runs, ParityBar{}).pass);
}

TEST(Parity, AMissingQuestionOrOptionFailsTheRun) {
  const FixtureRun r = run_of("r", {0.7, 0.3}, 0.4);
  ObservedRun o = observed_of(r, {0.7, 0.3});
  o.questions[0].option_ids = {"b", "c"};
  const RunParity p = compare_run(r, o, true);
  EXPECT_EQ(p.status, RunParity::Status::failed);
  EXPECT_NE(p.note.find("no option \"a\""), std::string::npos) << p.note;
  o.questions.clear();
  EXPECT_EQ(compare_run(r, o, true).status, RunParity::Status::failed);
  const std::vector<RunParity> runs = {compare_run(r, o, true)};
  const ParitySummary s = summarize(runs, ParityBar{});
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(s.all.failed, 1);
}

}  // namespace
}  // namespace clef::eval
