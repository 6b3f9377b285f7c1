// Continuous batching end to end on the tiny test model (issue 11): decisions made together
// (Runner::begin / step / finish on an engine with parallel > 1) answer with the bytes of the
// same requests decided alone on a one-sequence engine without a state cache, for a mix of text
// lengths, images, a truncated state, cache hits beside misses, and records that join mid-way;
// a cancelled decision stops without disturbing the others.
#include <gtest/gtest.h>

#include <list>
#include <memory>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "media/base64.hpp"
#include "runtime/make_engine.hpp"
#include "support/batched_decisions.hpp"
#include "support/ticket_requests.hpp"
#include "support/ticket_text.hpp"
#include "support/tiny_engine_config.hpp"
#include "testmodel/make_test_model.hpp"
#include "util/error.hpp"

namespace {

using clef::json::Value;
namespace rt = clef::runtime;

constexpr int kChunk = 64;

rt::EngineConfig config(int parallel, std::int64_t cache_mb, int context = 1024) {
  rt::EngineConfig c = clef::test::tiny_engine_config();
  c.backbone.context_size = context;
  c.backbone.chunk_tokens = kChunk;
  c.backbone.parallel = parallel;
  c.state_cache_mb = cache_mb;
  return c;
}

const char* const kQuestionsA = clef::test::kTicketQuestionsA;
const char* const kQuestionsB = clef::test::kTicketQuestionsB;
using clef::test::decide_together;
using clef::test::InFlight;
using clef::test::mixed_requests;

class BatchedEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    solo_ = rt::make_engine(config(1, 0));
    for (const Value& body : mixed_requests()) alone_.push_back(solo_->decide(body));
  }
  static void TearDownTestSuite() {
    solo_.reset();
    alone_.clear();
  }
  static std::optional<rt::Engine> solo_;
  static std::vector<rt::Decision> alone_;
};
std::optional<rt::Engine> BatchedEngineTest::solo_;
std::vector<rt::Decision> BatchedEngineTest::alone_;

TEST_F(BatchedEngineTest, AMixDecidedTogetherGivesTheBytesOfEachAlone) {
  const std::vector<Value> bodies = mixed_requests();
  for (std::int64_t cache_mb : {std::int64_t{0}, std::int64_t{64}}) {
    SCOPED_TRACE("state cache " + std::to_string(cache_mb) + " MiB");
    auto engine = rt::make_engine(config(4, cache_mb));
    ASSERT_EQ(engine.runner->parallel(), 4);
    EXPECT_EQ(engine.served().limits.parallel, 4);
    EXPECT_GT(engine.served().limits.sequence_bytes, 0u);
    EXPECT_NE(engine.served().sequence_memory.find("parallel 4 x context 1024: "),
              std::string::npos)
        << engine.served().sequence_memory;
    // Twice: the second round finds every state cached (hits beside misses in one batch, since
    // requests 1 and 4 also share a state within the round).
    for (int round = 0; round < 2; ++round) {
      const std::vector<std::string> got = decide_together(engine, bodies);
      for (std::size_t i = 0; i < bodies.size(); ++i) {
        EXPECT_EQ(got[i], alone_[i].body) << "round " << round << ", request " << i;
      }
    }
    if (cache_mb > 0) {
      EXPECT_GT(engine.runner->state_cache_stats().hits, 4u);
    }
  }
}

/// The small presets: other row sizes and kernels than the tiny model's (small: n_embd 256, F16),
/// and Clef 27B's ratios (small-27b, issue 44: value heads 3x key heads, 6 query heads on one KV
/// head, a 320-wide head and projector): other recurrent-state and KV sizes per sequence, so
/// other snapshots, suspensions and batch layouts.
class SmallModelBatchingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SmallModelBatchingTest, DecidesAMixTogetherWithTheBytesOfEachAlone) {
  clef::test::TempDir dir("clef-batch-small");
  clef::testmodel::MakeOptions o;
  o.dir = dir.path() / "model";
  o.seed = 5;
  o.preset = GetParam();
  clef::testmodel::make_test_model(o);
  rt::EngineConfig base = rt::EngineConfig::from_model_dir(o.dir.string());
  base.backbone.context_size = 1024;
  base.backbone.chunk_tokens = kChunk;
  base.backbone.threads = 1;
  rt::EngineConfig solo_config = base;
  solo_config.state_cache_mb = 0;
  rt::EngineConfig batched_config = base;
  batched_config.state_cache_mb = 64;
  batched_config.backbone.parallel = 4;
  auto solo = rt::make_engine(solo_config);
  auto batched = rt::make_engine(batched_config);
  const std::vector<Value> bodies = mixed_requests();
  std::vector<std::string> alone;
  for (const Value& body : bodies) alone.push_back(solo.decide(body).body);
  for (int round = 0; round < 2; ++round) {
    const std::vector<std::string> got = decide_together(batched, bodies);
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      EXPECT_EQ(got[i], alone[i]) << "round " << round << ", request " << i;
    }
  }
  EXPECT_GT(batched.runner->state_cache_stats().hits, 4u)
      << "the second round resumes cached states";
}

INSTANTIATE_TEST_SUITE_P(Presets, SmallModelBatchingTest,
                         ::testing::Values(std::string("small"), std::string("small-27b")),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "small" ? std::string("Small")
                                                        : std::string("Small27b");
                         });

TEST_F(BatchedEngineTest, ACancelledDecisionStopsAndTheOthersKeepTheirBytes) {
  auto engine = rt::make_engine(config(3, 0));
  const std::vector<Value> bodies = mixed_requests();
  std::list<InFlight> active;
  for (std::size_t i : {1u, 3u, 7u}) {
    InFlight& f = active.emplace_back();
    f.prepared = engine.prepare(bodies[i]);
    f.index = i;
    f.decision = engine.runner->begin(f.prepared);
  }
  // All three sequences are held now.
  rt::PreparedRequest extra = engine.prepare(bodies[0]);
  EXPECT_THROW(engine.runner->begin(extra), clef::Error);
  std::vector<rt::DecisionInProgress*> step;
  for (InFlight& f : active) step.push_back(f.decision.get());
  clef::test::step_together(*engine.runner, step);
  auto gone = std::next(active.begin());  // request 3, the long one
  ASSERT_FALSE(gone->decision->prefilled());
  gone->prepared.cancellation.cancel();
  while (!std::all_of(active.begin(), active.end(),
                      [](const InFlight& f) { return f.decision->prefilled(); })) {
    clef::test::step_together(*engine.runner, step);
  }
  EXPECT_THROW(engine.runner->finish(*gone->decision), clef::DecisionCancelled);
  EXPECT_EQ(engine.runner->finish(*active.front().decision).body, alone_[1].body);
  EXPECT_EQ(engine.runner->finish(*active.back().decision).body, alone_[7].body);
  // Their sequences are given back when the decisions go.
  active.clear();
  const std::vector<std::string> again = decide_together(engine, {bodies[3], bodies[0]});
  EXPECT_EQ(again[0], alone_[3].body);
  EXPECT_EQ(again[1], alone_[0].body);
}

/// Continuous batching too: a decision whose client left mid-prefill leaves its progress in the
/// state cache, and the retry resumes there with the bytes of the request alone.
TEST_F(BatchedEngineTest, ACancelledDecisionLeavesItsProgressForTheRetry) {
  auto c = config(2, 64);
  c.resume_snapshot_ms = 1;
  auto engine = rt::make_engine(c);
  const std::vector<Value> bodies = mixed_requests();
  InFlight gone;
  gone.prepared = engine.prepare(bodies[3]);
  gone.decision = engine.runner->begin(gone.prepared);
  std::vector<rt::DecisionInProgress*> step{gone.decision.get()};
  const int total = gone.prepared.input_tokens();
  while (gone.decision->tokens_left() > total / 2) clef::test::step_together(*engine.runner, step);
  gone.prepared.cancellation.cancel();
  while (!gone.decision->prefilled()) clef::test::step_together(*engine.runner, step);
  EXPECT_THROW(engine.runner->finish(*gone.decision), clef::DecisionCancelled);
  gone.decision.reset();

  const rt::PreparedRequest retry = engine.prepare(bodies[3]);
  auto again = engine.runner->begin(retry);
  std::vector<rt::DecisionInProgress*> one{again.get()};
  while (!again->prefilled()) clef::test::step_together(*engine.runner, one);
  const rt::Decision d = engine.runner->finish(*again);
  EXPECT_EQ(d.body, alone_[3].body);
  EXPECT_GE(d.cached_tokens, total / 4) << "the retry resumed from the abandoned prefill";
  EXPECT_LT(d.cached_tokens, total);
}

/// Reported: a request's images were all encoded when it joined, holding every other decision
/// up meanwhile (a short request waited 25 s behind two 2048x2048 images with --parallel 4). The
/// tower now takes one image per step, and the others step between them.
TEST_F(BatchedEngineTest, ImagesAreEncodedOnePerStepWhileTheOthersGoOn) {
  auto engine = rt::make_engine(config(2, 0));
  const std::vector<Value> bodies = mixed_requests();
  const Value three_images = clef::json::parse(
      R"({"state": "Compare", "questions": {"q": {"type": "noul"}}, "images": [")" +
      clef::test::grey_png_uri(64, 64) + R"(", ")" + clef::test::grey_png_uri(32, 96) + R"(", ")" +
      clef::test::grey_png_uri(80, 40) + R"("]})");
  const std::string images_alone = solo_->decide(three_images).body;
  rt::PreparedRequest text = engine.prepare(bodies[1]);
  rt::PreparedRequest images = engine.prepare(three_images);
  auto t = engine.runner->begin(text);
  auto im = engine.runner->begin(images);
  const int text_left = t->tokens_left();
  const int images_left = im->tokens_left();
  std::vector<rt::DecisionInProgress*> both{t.get(), im.get()};
  clef::test::step_together(*engine.runner, both);
  // One image encoded, the prefill not started: the text record went on.
  EXPECT_LT(t->tokens_left(), text_left);
  EXPECT_EQ(im->tokens_left(), images_left);
  clef::test::step_together(*engine.runner, both);
  EXPECT_EQ(im->tokens_left(), images_left);  // the second image
  while (!t->prefilled() || !im->prefilled()) clef::test::step_together(*engine.runner, both);
  EXPECT_EQ(engine.runner->finish(*t).body, alone_[1].body);
  EXPECT_EQ(engine.runner->finish(*im).body, images_alone);
}

TEST_F(BatchedEngineTest, AOneSequenceEngineTakesOneDecisionAtATime) {
  EXPECT_EQ(solo_->runner->parallel(), 1);
  const std::vector<Value> bodies = mixed_requests();
  rt::PreparedRequest first = solo_->prepare(bodies[0]);
  rt::PreparedRequest second = solo_->prepare(bodies[5]);
  auto held = solo_->runner->begin(first);
  EXPECT_THROW(solo_->runner->begin(second), clef::Error);
  // decide() needs the one sequence too.
  EXPECT_THROW(solo_->decide(second), clef::Error);
  held.reset();
  EXPECT_EQ(decide_together(*solo_, {bodies[0], bodies[5]}),
            (std::vector<std::string>{alone_[0].body, alone_[5].body}));
}

}  // namespace
