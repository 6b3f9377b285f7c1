// The backbone returns the final-norm hidden state of every token (contract section 4) through
// the nextn path, equal to llama.cpp's embeddings-mode rows, independent of chunking (flash
// attention off), with a fresh state for every record.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "backbone/backbone.hpp"
#include "support/prefill_alone.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/token_ids.hpp"
#include "util/error.hpp"

namespace {

using clef::backbone::Backbone;
using clef::backbone::BackboneParams;
using clef::backbone::HiddenStates;
using clef::testmodel::random_token_ids;

BackboneParams params_with_chunk(int chunk) {
  BackboneParams p;
  p.context_size = 2048;
  p.threads = 1;  // ctest runs two tests at once on two cores
  p.chunk_tokens = chunk;
  return p;
}

float max_abs_diff(const HiddenStates& a, const HiddenStates& b) {
  EXPECT_EQ(a.data.size(), b.data.size());
  float m = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) m = std::max(m, std::fabs(a.data[i] - b.data[i]));
  return m;
}

/// Rows from llama.cpp's embeddings mode (embeddings = true, pooling none, every token an output):
/// what the nextn path must reproduce without computing the LM head.
std::vector<float> embeddings_mode_rows(const Backbone& backbone, std::span<const int32_t> ids) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 2048;
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(ids.size());
  cp.n_threads = cp.n_threads_batch = 1;
  cp.embeddings = true;
  cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  clef::backbone::LlamaContextPtr ctx(
      llama_init_from_model(const_cast<llama_model*>(backbone.model()), cp));
  EXPECT_TRUE(ctx);
  llama_batch batch = llama_batch_init(static_cast<int32_t>(ids.size()), 0, 1);
  batch.n_tokens = static_cast<int32_t>(ids.size());
  for (int i = 0; i < batch.n_tokens; ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  EXPECT_EQ(llama_decode(ctx.get(), batch), 0);
  std::vector<float> rows;
  const int n_embd = backbone.n_embd();
  for (int i = 0; i < batch.n_tokens; ++i) {
    const float* r = llama_get_embeddings_ith(ctx.get(), i);
    rows.insert(rows.end(), r, r + n_embd);
  }
  llama_batch_free(batch);
  return rows;
}

/// On the tiny model and on Clef 27B's ratios (small-27b).
class BackboneTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { clef::test::ensure_llama_backend(); }
  const std::string& path() const { return model_path_; }
  std::string model_path_ = clef::test::preset_model(GetParam()).backbone.string();
};

TEST_P(BackboneTest, HiddenStatesHaveOneFiniteRowPerToken) {
  Backbone backbone(path(), params_with_chunk(64));
  const auto ids = random_token_ids(300, backbone.n_vocab(), 1);
  const HiddenStates h = clef::test::hidden_states(backbone, ids);
  ASSERT_EQ(h.rows, 300);
  ASSERT_EQ(h.n_embd, backbone.n_embd());
  ASSERT_EQ(h.data.size(), 300u * static_cast<std::size_t>(backbone.n_embd()));
  for (float v : h.data) ASSERT_TRUE(std::isfinite(v));
  // Rows differ from token to token (the model is not degenerate).
  auto one_row = [&](int t) {
    HiddenStates r;
    r.rows = 1;
    r.n_embd = h.n_embd;
    r.data.assign(h.row(t).begin(), h.row(t).end());
    return r;
  };
  EXPECT_GT(max_abs_diff(one_row(0), one_row(1)), 0.0f);
}

TEST_P(BackboneTest, NextnRowsEqualEmbeddingsModeRows) {
  Backbone backbone(path(), params_with_chunk(512));
  const auto ids = random_token_ids(109, backbone.n_vocab(), 2);
  const HiddenStates h = clef::test::hidden_states(backbone, ids);
  const auto reference = embeddings_mode_rows(backbone, ids);
  ASSERT_EQ(reference.size(), h.data.size());
  for (std::size_t i = 0; i < reference.size(); ++i) ASSERT_EQ(h.data[i], reference[i]) << i;
}

TEST_P(BackboneTest, ChunkedPrefillIsBitIdenticalToOnePassWithFlashAttentionOff) {
  Backbone chunked(path(), params_with_chunk(64));
  Backbone one_pass(path(), params_with_chunk(1024));
  for (int n : {63, 64, 65, 127, 128, 129, 1000}) {
    const auto ids = random_token_ids(n, chunked.n_vocab(), static_cast<std::uint32_t>(n));
    EXPECT_EQ(max_abs_diff(clef::test::hidden_states(chunked, ids),
                           clef::test::hidden_states(one_pass, ids)),
              0.0f)
        << "length " << n;
  }
}

TEST_P(BackboneTest, EveryRecordStartsFromAFreshState) {
  Backbone backbone(path(), params_with_chunk(64));
  const auto a = random_token_ids(150, backbone.n_vocab(), 3);
  const auto b = random_token_ids(90, backbone.n_vocab(), 4);
  const HiddenStates a_first = clef::test::hidden_states(backbone, a);
  clef::test::hidden_states(backbone, b);
  const HiddenStates a_after_b = clef::test::hidden_states(backbone, a);
  EXPECT_EQ(a_first.data, a_after_b.data);
}

TEST_P(BackboneTest, ANewContextAfterReleaseGivesTheSameRows) {
  Backbone backbone(path(), params_with_chunk(64));
  EXPECT_EQ(backbone.longest_record(), 0);
  const auto a = random_token_ids(150, backbone.n_vocab(), 3);
  const HiddenStates before = clef::test::hidden_states(backbone, a);
  clef::test::hidden_states(backbone, random_token_ids(90, backbone.n_vocab(), 4));
  EXPECT_EQ(backbone.longest_record(), 150);
  backbone.release_compute_memory();
  EXPECT_EQ(backbone.longest_record(), 0);
  EXPECT_EQ(clef::test::hidden_states(backbone, a).data, before.data);
}

/// A cold prefill cut at `cut` taking a snapshot there, and the same record resumed from it.
struct ColdAndWarm {
  HiddenStates cold;
  HiddenStates warm;
};
ColdAndWarm cold_and_warm(Backbone& backbone, std::span<const int32_t> ids,
                          std::span<const int32_t> other_ids, int cut) {
  const std::vector<int> cuts = {cut};
  clef::backbone::PrefillOptions take;
  take.cuts = cuts;
  take.snapshot_at = cuts;
  ColdAndWarm out;
  out.cold = clef::test::hidden_states(backbone, ids, {}, {}, take);
  EXPECT_EQ(out.cold.snapshots.size(), 1u);
  EXPECT_EQ(out.cold.snapshots.at(0).tokens, cut);
  clef::test::hidden_states(backbone, other_ids);  // something else in between
  clef::backbone::PrefillOptions resume;
  resume.cuts = cuts;
  resume.resume = &out.cold.snapshots[0];
  resume.resume_rows =
      std::span<const float>(out.cold.data)
          .first(static_cast<std::size_t>(cut) * static_cast<std::size_t>(backbone.n_embd()));
  out.warm = clef::test::hidden_states(backbone, ids, {}, {}, resume);
  return out;
}

TEST_P(BackboneTest, ResumingAMemorySnapshotGivesTheColdRowsBitForBit) {
  Backbone backbone(path(), params_with_chunk(64));
  const auto ids = random_token_ids(230, backbone.n_vocab(), 11);
  const auto other = random_token_ids(120, backbone.n_vocab(), 12);
  // The snapshot point 1 token before, at, and 1 token after a chunk boundary, and mid-chunk.
  for (int cut : {63, 64, 65, 100, 128, 129, 200}) {
    const ColdAndWarm r = cold_and_warm(backbone, ids, other, cut);
    EXPECT_EQ(r.warm.data, r.cold.data) << "cut at " << cut;
  }
}

TEST_P(BackboneTest, ASecondRecordResumesFromTheSharedPrefixOfAnother) {
  // Record B shares its first 100 tokens with A: A's snapshot at 100 gives B's cold rows.
  Backbone backbone(path(), params_with_chunk(64));
  const auto a = random_token_ids(180, backbone.n_vocab(), 13);
  auto b = random_token_ids(160, backbone.n_vocab(), 14);
  std::copy(a.begin(), a.begin() + 100, b.begin());
  const std::vector<int> cuts = {100};
  clef::backbone::PrefillOptions take;
  take.cuts = cuts;
  take.snapshot_at = cuts;
  const HiddenStates from_a = clef::test::hidden_states(backbone, a, {}, {}, take);
  clef::backbone::PrefillOptions cold_b;
  cold_b.cuts = cuts;
  const HiddenStates b_cold = clef::test::hidden_states(backbone, b, {}, {}, cold_b);
  clef::backbone::PrefillOptions warm_b = cold_b;
  warm_b.resume = &from_a.snapshots.at(0);
  warm_b.resume_rows = std::span<const float>(from_a.data).first(100u * backbone.n_embd());
  EXPECT_EQ(clef::test::hidden_states(backbone, b, {}, {}, warm_b).data, b_cold.data);
  // The cut itself changes nothing on the CPU with flash attention off.
  EXPECT_EQ(clef::test::hidden_states(backbone, b).data, b_cold.data);
}

TEST_P(BackboneTest, AnEditedRecordResumesFromACheckpointOfTheFirst) {
  // A's snapshot at 200 with recurrent-only checkpoints at chunk boundaries; B agrees with A on
  // its first 150 tokens: B resumes at 128 (the last common boundary) from A's snapshot plus the
  // checkpoint, and gets its cold rows.
  Backbone backbone(path(), params_with_chunk(64));
  const auto a = random_token_ids(260, backbone.n_vocab(), 16);
  auto b = random_token_ids(240, backbone.n_vocab(), 17);
  std::copy(a.begin(), a.begin() + 150, b.begin());
  const std::vector<int> a_cuts = {200};
  const std::vector<int> checkpoints = {64, 128};
  clef::backbone::PrefillOptions take;
  take.cuts = a_cuts;
  take.snapshot_at = a_cuts;
  take.checkpoint_at = checkpoints;
  const HiddenStates from_a = clef::test::hidden_states(backbone, a, {}, {}, take);
  ASSERT_EQ(from_a.checkpoints.size(), 2u);
  EXPECT_TRUE(from_a.checkpoints[1].partial);
  EXPECT_LT(from_a.checkpoints[1].data.size(), from_a.snapshots.at(0).data.size());
  const std::vector<int> b_cuts = {190};
  clef::backbone::PrefillOptions cold_b;
  cold_b.cuts = b_cuts;
  const HiddenStates b_cold = clef::test::hidden_states(backbone, b, {}, {}, cold_b);
  for (int c : {64, 128}) {
    clef::backbone::PrefillOptions warm_b = cold_b;
    warm_b.resume = &from_a.snapshots.at(0);
    warm_b.resume_checkpoint = &from_a.checkpoints.at(c == 64 ? 0 : 1);
    warm_b.resume_rows =
        std::span<const float>(from_a.data).first(static_cast<std::size_t>(c) * backbone.n_embd());
    EXPECT_EQ(clef::test::hidden_states(backbone, b, {}, {}, warm_b).data, b_cold.data)
        << "from " << c;
  }
  // A checkpoint cannot be resumed without the full snapshot it was taken on the way to.
  clef::backbone::PrefillOptions alone = cold_b;
  alone.resume = &from_a.checkpoints.at(1);
  alone.resume_rows = std::span<const float>(from_a.data).first(128u * backbone.n_embd());
  EXPECT_THROW(clef::test::hidden_states(backbone, b, {}, {}, alone), clef::Error);
  EXPECT_EQ(clef::test::hidden_states(backbone, b, {}, {}, cold_b).data, b_cold.data);
}

TEST_P(BackboneTest, OthersRunBetweenTheBatchesOfASuspendedPrefillWithoutChangingItsRows) {
  Backbone backbone(path(), params_with_chunk(64));
  const auto long_ids = random_token_ids(400, backbone.n_vocab(), 18);
  const auto short_ids = random_token_ids(90, backbone.n_vocab(), 19);
  const HiddenStates long_cold = clef::test::hidden_states(backbone, long_ids);
  const HiddenStates short_cold = clef::test::hidden_states(backbone, short_ids);
  clef::backbone::Prefill p = backbone.start(long_ids, {}, {}, {}, {}, 0);
  clef::backbone::Prefill* const one = &p;
  int batches = 0;
  std::vector<HiddenStates> others;
  while (!p.done()) {
    backbone.step(std::span<clef::backbone::Prefill* const>(&one, 1),
                  clef::backbone::kWholeBatches);
    if (++batches % 2 == 1 && !p.done()) {  // after every other batch
      backbone.suspend(p);
      EXPECT_THROW(
          clef::test::step_shared(backbone, std::span<clef::backbone::Prefill* const>(&one, 1)),
          clef::Error);
      others.push_back(clef::test::hidden_states(backbone, short_ids));
      backbone.resume(p, 0);
    }
  }
  EXPECT_EQ(p.take().data, long_cold.data);
  EXPECT_EQ(batches, 7);  // 6 of 64, then 16
  ASSERT_EQ(others.size(), 3u);
  for (const HiddenStates& h : others) EXPECT_EQ(h.data, short_cold.data);
}

TEST_P(BackboneTest, ResumePointsOffTheLayoutAreRefused) {
  Backbone backbone(path(), params_with_chunk(64));
  const auto ids = random_token_ids(150, backbone.n_vocab(), 15);
  const std::vector<int> cuts = {70};
  clef::backbone::PrefillOptions take;
  take.cuts = cuts;
  take.snapshot_at = cuts;
  const HiddenStates cold = clef::test::hidden_states(backbone, ids, {}, {}, take);
  clef::backbone::PrefillOptions bad;  // no cut at 70: the snapshot is not at a batch boundary
  bad.resume = &cold.snapshots.at(0);
  bad.resume_rows = std::span<const float>(cold.data).first(70u * backbone.n_embd());
  EXPECT_THROW(clef::test::hidden_states(backbone, ids, {}, {}, bad), clef::Error);
  bad.cuts = cuts;
  bad.resume_rows = std::span<const float>(cold.data).first(69u * backbone.n_embd());
  EXPECT_THROW(clef::test::hidden_states(backbone, ids, {}, {}, bad), clef::Error);
  const std::vector<int> off = {71};
  clef::backbone::PrefillOptions bad_snapshot;
  bad_snapshot.cuts = cuts;
  bad_snapshot.snapshot_at = off;
  EXPECT_THROW(clef::test::hidden_states(backbone, ids, {}, {}, bad_snapshot), clef::Error);
  // The backbone still works.
  EXPECT_EQ(clef::test::hidden_states(backbone, ids).data, cold.data);
}

TEST_P(BackboneTest, RefusesEmptyAndOverlongRecords) {
  BackboneParams p = params_with_chunk(64);
  p.context_size = 512;
  Backbone backbone(path(), p);
  EXPECT_THROW(clef::test::hidden_states(backbone, {}), clef::Error);
  const auto ids = random_token_ids(513, backbone.n_vocab(), 5);
  try {
    clef::test::hidden_states(backbone, ids);
    FAIL() << "a record over the context must be refused";
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_EQ(e.code(), "context_length_exceeded");
  }
}

TEST_P(BackboneTest, RefusesBadParametersAndFiles) {
  BackboneParams p;
  p.context_size = 100;
  EXPECT_THROW(Backbone(path(), p), clef::Error);
  EXPECT_THROW(Backbone(clef::test::tiny_model().head.string(), BackboneParams{}), clef::Error);
  EXPECT_THROW(Backbone(clef::test::tiny_model().mmproj.string(), BackboneParams{}), clef::Error);
}

}  // namespace

namespace {

INSTANTIATE_TEST_SUITE_P(Models, BackboneTest, ::testing::ValuesIn(clef::test::model_presets()),
                         clef::test::preset_test_name);

TEST(ChunkLayout, FullChunksThenTheRestButNeverAOneTokenTail) {
  using clef::backbone::chunk_length;
  auto layout = [](int total, int chunk) {
    std::vector<int> out;
    for (int start = 0; start < total;) {
      out.push_back(chunk_length(total, start, chunk));
      start += out.back();
    }
    return out;
  };
  EXPECT_EQ(layout(63, 64), (std::vector<int>{63}));
  EXPECT_EQ(layout(64, 64), (std::vector<int>{64}));
  // A chunk + 1 tokens: a whole 16-row block moves to the last chunk, so every boundary stays on
  // a multiple of 16 (kBatchRowAlignment) and no chunk is a single token.
  EXPECT_EQ(layout(65, 64), (std::vector<int>{48, 17}));
  EXPECT_EQ(layout(129, 64), (std::vector<int>{64, 48, 17}));
  EXPECT_EQ(layout(17, 16), (std::vector<int>{15, 2}));  // chunks of 16 or fewer: (chunk - 1, 2)
  EXPECT_EQ(layout(33, 32), (std::vector<int>{16, 17}));
  EXPECT_EQ(layout(130, 64), (std::vector<int>{64, 64, 2}));
  EXPECT_EQ(layout(1, 64), (std::vector<int>{1}));
  EXPECT_EQ(layout(3, 1), (std::vector<int>{1, 1, 1}));
}

}  // namespace

namespace {

/// The weights and the context apart (llama.cpp's llama_model and llama_context): two contexts
/// made on one load of the weights share them, each gives the rows a backbone loaded alone gives,
/// and the weights outlive the context that loaded them.
TEST(BackboneWeights, TwoContextsShareOneLoadOfTheWeights) {
  const std::string path = clef::test::tiny_model().backbone.string();
  const BackboneParams one = params_with_chunk(64);
  BackboneParams two = one;
  two.parallel = 2;
  two.chunk_tokens = 128;
  const std::vector<std::int32_t> ids = random_token_ids(200, 1000, 7);
  Backbone alone(path, one);
  const HiddenStates reference = clef::test::hidden_states(alone, ids);

  std::shared_ptr<const clef::backbone::BackboneWeights> weights;
  {
    auto first = std::make_unique<Backbone>(clef::backbone::BackboneWeights::load(path, one), one);
    weights = first->weights();
    Backbone second(weights, two);
    EXPECT_EQ(first->model(), second.model()) << "one llama_model";
    EXPECT_TRUE(clef::test::hidden_states(*first, ids).data == reference.data);
    first.reset();  // the context that loaded them goes; the weights stay
    EXPECT_TRUE(clef::test::hidden_states(second, ids).data == reference.data);
  }
  EXPECT_EQ(weights.use_count(), 1);
  // A context on weights placed otherwise is refused, naming what differs.
  BackboneParams plain = one;
  plain.weight_repacking = !one.weight_repacking;
  try {
    Backbone refused(weights, plain);
    FAIL() << "a context with other weight repacking was made";
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.param(), "weight_repacking") << e.what();
  }
}

}  // namespace
