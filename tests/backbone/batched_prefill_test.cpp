// Continuous batching (issue 11): records prefilled together through Backbone::step give the
// bytes each gets alone, whatever else is in the batch: mixed lengths, layout tails, embedding
// spans with M-RoPE positions, records joining mid-way, a resumed snapshot beside a cold record,
// a cancelled record, non-consecutive sequences, plain and repacked quantized weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "support/prefill_alone.hpp"
#include "support/q4_k_m_model.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/token_ids.hpp"
#include "util/error.hpp"

namespace {

using clef::backbone::Backbone;
using clef::backbone::BackboneParams;
using clef::backbone::EmbeddingSpan;
using clef::backbone::HiddenStates;
using clef::backbone::Prefill;
using clef::backbone::PrefillOptions;
using clef::backbone::RopePosition;
using clef::testmodel::random_token_ids;

BackboneParams params(int chunk, int parallel) {
  BackboneParams p;
  p.context_size = 2048;
  p.threads = 1;  // ctest runs two tests at once on two cores
  p.chunk_tokens = chunk;
  p.parallel = parallel;
  return p;
}

using clef::test::q4_k_m_backbone;

/// One record's inputs: ids, and optionally an image-like span of embedding rows with M-RoPE
/// positions (a grid of `grid_h` x `grid_w` tokens at `image_at`, text after it moved on by the
/// grid's larger side, as contract section 4 lays out an image block).
struct RecordInput {
  std::vector<std::int32_t> ids;
  std::vector<RopePosition> positions;
  std::vector<float> rows;
  std::vector<EmbeddingSpan> spans;
};

RecordInput text_record(int length, int vocab, std::uint32_t seed) {
  RecordInput r;
  r.ids = random_token_ids(static_cast<std::size_t>(length), vocab, seed);
  return r;
}

RecordInput image_record(int before, int grid_h, int grid_w, int after, int vocab, int n_embd,
                         std::uint32_t seed) {
  const int n_image = grid_h * grid_w;
  RecordInput r = text_record(before + n_image + after, vocab, seed);
  std::int32_t q = 0;
  for (int t = 0; t < before; ++t, ++q) r.positions.push_back({q, q, q, q});
  for (int i = 0; i < n_image; ++i) {
    r.positions.push_back({q, q + i / grid_w, q + i % grid_w, 0});
  }
  q += std::max(grid_h, grid_w);
  for (int t = 0; t < after; ++t, ++q) r.positions.push_back({q, q, q, q});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  r.rows.resize(static_cast<std::size_t>(n_image) * n_embd);
  for (float& v : r.rows) v = normal(rng);
  r.spans.push_back({before, n_image, r.rows});
  return r;
}

HiddenStates alone(Backbone& backbone, const RecordInput& r, const PrefillOptions& reuse = {}) {
  return clef::test::hidden_states(backbone, r.ids, r.positions, r.spans, reuse);
}

/// Steps `prefills` until every one is done; returns how many steps it took.
int run_steps(Backbone& backbone, std::vector<Prefill*> prefills) {
  int steps = 0;
  auto all_done = [&] {
    return std::all_of(prefills.begin(), prefills.end(), [](Prefill* p) { return p->done(); });
  };
  while (!all_done()) {
    clef::test::step_shared(backbone, prefills);
    ++steps;
  }
  return steps;
}

/// On the tiny model and on Clef 27B's ratios (small-27b).
class BatchedPrefillTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { clef::test::ensure_llama_backend(); }
  const clef::testmodel::MadeModel& test_model() const {
    return clef::test::preset_model(GetParam());
  }
};

/// Every record of `records` decided together on `batched` equals it decided alone on `solo`.
void expect_batch_invariant(Backbone& solo, Backbone& batched,
                            const std::vector<RecordInput>& records) {
  std::vector<HiddenStates> expected;
  for (const RecordInput& r : records) expected.push_back(alone(solo, r));
  std::vector<Prefill> prefills;
  prefills.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    prefills.push_back(batched.start(records[i].ids, records[i].positions, records[i].spans, {}, {},
                                     static_cast<int>(i)));
  }
  std::vector<Prefill*> pointers;
  for (Prefill& p : prefills) pointers.push_back(&p);
  const int steps = run_steps(batched, pointers);
  EXPECT_GT(steps, 0);
  for (std::size_t i = 0; i < records.size(); ++i) {
    ASSERT_FALSE(prefills[i].cancelled());
    const HiddenStates got = prefills[i].take();
    ASSERT_EQ(got.rows, expected[i].rows) << "record " << i;
    EXPECT_TRUE(got.data == expected[i].data)
        << "record " << i << " (" << records[i].ids.size() << " tokens) differs in a batch";
  }
}

TEST_P(BatchedPrefillTest, MixedTextLengthsGiveTheBytesOfEachAlone) {
  const auto& model = test_model();
  for (int chunk : {64, 512}) {
    Backbone solo(model.backbone.string(), params(chunk, 1));
    Backbone batched(model.backbone.string(), params(chunk, 8));
    std::vector<RecordInput> records;
    std::uint32_t seed = 11;
    // Lengths around chunk and row-alignment boundaries, a 2-token record, equal lengths.
    for (int length : {300, 37, 530, 65, 129, 2, 300, 1000}) {
      records.push_back(text_record(length, solo.n_vocab(), seed++));
    }
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    expect_batch_invariant(solo, batched, records);
  }
}

TEST_P(BatchedPrefillTest, WithFlashAttentionWholeLayoutBatchesKeepTheBytesOfEachAlone) {
  // Flash attention's kernels depend on the layout, so a step decodes whole layout batches then.
  const auto& model = test_model();
  BackboneParams fa_solo = params(64, 1);
  fa_solo.flash_attention = true;
  BackboneParams fa_batched = params(64, 4);
  fa_batched.flash_attention = true;
  Backbone solo(model.backbone.string(), fa_solo);
  Backbone batched(model.backbone.string(), fa_batched);
  std::vector<RecordInput> records;
  std::uint32_t seed = 61;
  for (int length : {300, 129, 65, 300}) {
    records.push_back(text_record(length, solo.n_vocab(), seed++));
  }
  expect_batch_invariant(solo, batched, records);
  // Pieces would move its rows: a step of anything but whole layout batches is refused, and so
  // is a piece off the 16-row alignment without flash attention.
  Prefill p = batched.start(records[0].ids, records[0].positions, records[0].spans, {}, {}, 0);
  EXPECT_THROW(
      batched.step(std::span<Prefill* const>(std::array{&p}), clef::backbone::kPausablePiece),
      clef::Error);
  Backbone plain(model.backbone.string(), params(64, 1));
  Prefill q = plain.start(records[0].ids, records[0].positions, records[0].spans, {}, {}, 0);
  EXPECT_THROW(plain.step(std::span<Prefill* const>(std::array{&q}), 24), clef::Error);
  EXPECT_THROW(plain.step(std::span<Prefill* const>(std::array{&q}), 0), clef::Error);
  EXPECT_EQ(q.prefilled(), 0);
}

TEST_P(BatchedPrefillTest, ASuspendedSoloPrefillGivesTheBytesOfItsLayout) {
  // One sequence: a prefill stepped in kPausablePiece pieces and suspended between them while
  // others use the sequence (its memory taken out and set back) gives the bytes of its whole
  // 512-token layout batches.
  const auto& model = test_model();
  Backbone backbone(model.backbone.string(), params(512, 1));
  const RecordInput r = text_record(1100, backbone.n_vocab(), 71);
  const RecordInput other = text_record(40, backbone.n_vocab(), 72);
  const HiddenStates whole = alone(backbone, r);
  const HiddenStates other_alone = alone(backbone, other);
  Prefill p = backbone.start(r.ids, r.positions, r.spans, {}, {}, 0);
  int pieces = 0;
  int suspended = 0;
  while (!p.done()) {
    backbone.step(std::span<Prefill* const>(std::array{&p}), clef::backbone::kPausablePiece);
    ++pieces;
    if (p.done() || pieces % 2 != 0) continue;
    backbone.suspend(p);
    ASSERT_TRUE(p.suspended());
    EXPECT_THROW(clef::test::step_shared(backbone, std::span<Prefill* const>(std::array{&p})),
                 clef::Error);
    EXPECT_TRUE(alone(backbone, other).data == other_alone.data);
    backbone.resume(p, 0);
    ++suspended;
  }
  ASSERT_FALSE(p.cancelled());
  EXPECT_TRUE(p.take().data == whole.data);
  // 1,100 tokens in pieces of at most 256: 5 pieces; suspended after the 2nd and the 4th.
  EXPECT_EQ(pieces, (1100 + clef::backbone::kPausablePiece - 1) / clef::backbone::kPausablePiece);
  EXPECT_EQ(suspended, 2);
}

TEST_P(BatchedPrefillTest, ASuspendedPrefillResumesOnAnotherSequenceWithItsBytes) {
  // Two sequences: a prefill suspended from sequence 0 while two others take both sequences
  // resumes on sequence 1 (where a finished one was) beside the other, every one the bytes it
  // gets alone.
  const auto& model = test_model();
  Backbone solo(model.backbone.string(), params(64, 1));
  Backbone batched(model.backbone.string(), params(64, 2));
  const RecordInput a = text_record(300, solo.n_vocab(), 73);
  const RecordInput b = text_record(90, solo.n_vocab(), 74);
  const RecordInput c = text_record(130, solo.n_vocab(), 75);
  Prefill pa = batched.start(a.ids, a.positions, a.spans, {}, {}, 0);
  clef::test::step_shared(batched, std::span<Prefill* const>(std::array{&pa}));
  batched.suspend(pa);
  EXPECT_THROW(batched.suspend(pa), clef::Error);
  Prefill pb = batched.start(b.ids, b.positions, b.spans, {}, {}, 1);
  Prefill pc = batched.start(c.ids, c.positions, c.spans, {}, {}, 0);
  clef::test::step_shared(batched, std::span<Prefill* const>(std::array{&pb, &pc}));
  EXPECT_THROW(batched.resume(pa, 2), clef::Error);  // out of range
  run_steps(batched, {&pb});
  batched.resume(pa, 1);
  EXPECT_EQ(pa.sequence(), 1);
  EXPECT_THROW(batched.resume(pa, 1), clef::Error);  // not suspended
  run_steps(batched, {&pa, &pc});
  EXPECT_TRUE(pa.take().data == alone(solo, a).data);
  EXPECT_TRUE(pb.take().data == alone(solo, b).data);
  EXPECT_TRUE(pc.take().data == alone(solo, c).data);
}

/// Reported: --chunk-tokens 1..15 aborted at load (the memory probe decoded 16 tokens in one
/// call, over llama.cpp's n_batch). Every chunk size from 1 loads and decides, alone and batched.
TEST_P(BatchedPrefillTest, ChunksBelowSixteenTokensLoadAndDecide) {
  const auto& model = test_model();
  for (int chunk : {1, 8, 15}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Backbone solo(model.backbone.string(), params(chunk, 1));
    Backbone batched(model.backbone.string(), params(chunk, 2));
    EXPECT_GT(solo.sequence_memory().kv_bytes_per_token, 0u);
    expect_batch_invariant(
        solo, batched, {text_record(40, solo.n_vocab(), 81), text_record(33, solo.n_vocab(), 82)});
  }
}

TEST_P(BatchedPrefillTest, AParallelContextDecidesOneRecordAsAOneSequenceContextDoes) {
  const auto& model = test_model();
  Backbone solo(model.backbone.string(), params(64, 1));
  Backbone wide(model.backbone.string(), params(64, 4));
  const RecordInput r = text_record(333, solo.n_vocab(), 5);
  EXPECT_TRUE(alone(solo, r).data == alone(wide, r).data);
  EXPECT_GT(wide.sequence_memory().kv_bytes_per_token, 0u);
  EXPECT_GT(wide.sequence_memory().recurrent_bytes, 0u);
  EXPECT_EQ(wide.sequence_memory().per_sequence, wide.sequence_memory().kv_bytes_per_token * 2048 +
                                                     wide.sequence_memory().recurrent_bytes);
}

TEST_P(BatchedPrefillTest, EmbeddingSpansWithMropePositionsGiveTheBytesOfEachAlone) {
  const auto& model = test_model();
  Backbone solo(model.backbone.string(), params(64, 1));
  Backbone batched(model.backbone.string(), params(64, 4));
  const int vocab = solo.n_vocab();
  const int n_embd = solo.n_embd();
  std::vector<RecordInput> records;
  // Two records with the same span shape (their image pieces share a decode), one with another
  // shape, one text-only.
  records.push_back(image_record(36, 8, 8, 50, vocab, n_embd, 1));
  records.push_back(image_record(36, 8, 8, 70, vocab, n_embd, 2));
  records.push_back(image_record(20, 5, 7, 33, vocab, n_embd, 3));
  records.push_back(text_record(200, vocab, 4));
  expect_batch_invariant(solo, batched, records);
}

TEST(BatchedPrefillQ4KM, RepackedQuantizedWeightsGiveTheBytesOfEachAlone) {
  clef::test::ensure_llama_backend();
  Backbone solo(q4_k_m_backbone(), params(128, 1));
  Backbone batched(q4_k_m_backbone(), params(128, 6));
  std::vector<RecordInput> records;
  std::uint32_t seed = 40;
  for (int length : {300, 65, 129, 47, 256, 700}) {
    records.push_back(text_record(length, solo.n_vocab(), seed++));
  }
  expect_batch_invariant(solo, batched, records);
}

TEST_P(BatchedPrefillTest, RecordsJoiningMidwayOnScatteredSequencesKeepTheirBytes) {
  const auto& model = test_model();
  Backbone solo(model.backbone.string(), params(64, 1));
  Backbone batched(model.backbone.string(), params(64, 8));
  const int vocab = solo.n_vocab();
  const RecordInput long_one = text_record(900, vocab, 21);
  const RecordInput a = text_record(130, vocab, 22);
  const RecordInput b = text_record(260, vocab, 23);
  const RecordInput c = text_record(130, vocab, 24);
  Prefill pl = batched.start(long_one.ids, {}, {}, {}, {}, 5);
  for (int i = 0; i < 3; ++i) clef::test::step_shared(batched, std::vector<Prefill*>{&pl});
  ASSERT_FALSE(pl.done());
  // Sequences 0, 2, 5 and 7: not consecutive, joined while the long one is half-way.
  Prefill pa = batched.start(a.ids, {}, {}, {}, {}, 0);
  Prefill pb = batched.start(b.ids, {}, {}, {}, {}, 2);
  clef::test::step_shared(batched, std::vector<Prefill*>{&pl, &pa, &pb});
  Prefill pc = batched.start(c.ids, {}, {}, {}, {}, 7);
  run_steps(batched, {&pl, &pa, &pb, &pc});
  EXPECT_TRUE(pl.take().data == alone(solo, long_one).data);
  EXPECT_TRUE(pa.take().data == alone(solo, a).data);
  EXPECT_TRUE(pb.take().data == alone(solo, b).data);
  EXPECT_TRUE(pc.take().data == alone(solo, c).data);
}

TEST_P(BatchedPrefillTest, AResumedSnapshotBesideAColdRecordKeepsBothBytes) {
  const auto& model = test_model();
  Backbone solo(model.backbone.string(), params(64, 1));
  Backbone batched(model.backbone.string(), params(64, 4));
  const int vocab = solo.n_vocab();
  // A record whose first 256 tokens are cached (a snapshot taken alone), then a longer record
  // with that prefix resumed beside a cold one.
  const RecordInput shared = text_record(420, vocab, 31);
  const std::vector<int> cuts{256};
  PrefillOptions snap;
  snap.cuts = cuts;
  snap.snapshot_at = cuts;
  HiddenStates first = alone(batched, shared, snap);
  ASSERT_EQ(first.snapshots.size(), 1u);
  PrefillOptions resume;
  resume.cuts = cuts;
  resume.resume = &first.snapshots[0];
  resume.resume_rows =
      std::span<const float>(first.data).first(256 * static_cast<std::size_t>(first.n_embd));
  const RecordInput cold = text_record(310, vocab, 32);
  Prefill warm_p = batched.start(shared.ids, {}, {}, resume, {}, 1);
  Prefill cold_p = batched.start(cold.ids, {}, {}, {}, {}, 2);
  run_steps(batched, {&warm_p, &cold_p});
  PrefillOptions cut_only;
  cut_only.cuts = cuts;
  EXPECT_TRUE(warm_p.take().data == alone(solo, shared, cut_only).data);
  EXPECT_TRUE(cold_p.take().data == alone(solo, cold).data);
  // Snapshots taken on another sequence are the same as alone: the one from sequence 0 resumed
  // on sequence 3 gives the same rows.
  Prefill again = batched.start(shared.ids, {}, {}, resume, {}, 3);
  run_steps(batched, {&again});
  EXPECT_TRUE(again.take().data == alone(solo, shared, cut_only).data);
}

TEST_P(BatchedPrefillTest, ACancelledRecordStopsAndTheOthersKeepTheirBytes) {
  const auto& model = test_model();
  Backbone solo(model.backbone.string(), params(64, 1));
  Backbone batched(model.backbone.string(), params(64, 3));
  const int vocab = solo.n_vocab();
  const RecordInput a = text_record(400, vocab, 51);
  const RecordInput gone = text_record(400, vocab, 52);
  const RecordInput c = text_record(400, vocab, 53);
  bool hang_up = false;
  Prefill pa = batched.start(a.ids, {}, {}, {}, {}, 0);
  Prefill pg = batched.start(
      gone.ids, {}, {}, {}, [&] { return hang_up; }, 1);
  Prefill pc = batched.start(c.ids, {}, {}, {}, {}, 2);
  std::vector<Prefill*> all{&pa, &pg, &pc};
  clef::test::step_shared(batched, all);
  clef::test::step_shared(batched, all);
  hang_up = true;
  run_steps(batched, all);
  EXPECT_TRUE(pg.cancelled());
  EXPECT_GT(pg.cancelled_at(), 0);
  EXPECT_LT(pg.cancelled_at(), 400);
  EXPECT_TRUE(pa.take().data == alone(solo, a).data);
  EXPECT_TRUE(pc.take().data == alone(solo, c).data);
  // Its sequence is free and clean: the next record there is decided as alone.
  Prefill next = batched.start(gone.ids, {}, {}, {}, {}, 1);
  run_steps(batched, {&next});
  EXPECT_TRUE(next.take().data == alone(solo, gone).data);
}

TEST_P(BatchedPrefillTest, RefusesASequenceOutsideTheContextAndAnImpossibleParallel) {
  const auto& model = test_model();
  Backbone batched(model.backbone.string(), params(64, 2));
  const RecordInput r = text_record(10, batched.n_vocab(), 1);
  EXPECT_THROW(batched.start(r.ids, {}, {}, {}, {}, 2), clef::Error);
  EXPECT_THROW(batched.start(r.ids, {}, {}, {}, {}, -1), clef::Error);
  BackboneParams too_many = params(64, clef::backbone::kMaxParallel + 1);
  EXPECT_THROW(Backbone(model.backbone.string(), too_many), clef::Error);
}

TEST(BatchedPrefillMemory, AParallelThatDoesNotFitIsRefusedByName) {
  clef::backbone::SequenceMemory m;
  m.kv_bytes_per_token = 32768;
  m.recurrent_bytes = std::uint64_t{53} << 20;
  m.per_sequence = m.kv_bytes_per_token * 16384 + m.recurrent_bytes;  // 565 MiB
  EXPECT_NO_THROW(clef::backbone::check_parallel_fits(m, 8, std::uint64_t{8} << 30, "CPU"));
  EXPECT_NO_THROW(clef::backbone::check_parallel_fits(m, 64, 0, "CPU"));  // unknown room
  try {
    clef::backbone::check_parallel_fits(m, 16, std::uint64_t{8} << 30, "CPU");
    ADD_FAILURE() << "16 x 565 MiB in 8 GiB was not refused";
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.param(), "parallel");
    EXPECT_NE(std::string(e.what()).find("needs 9040.0 MiB"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("565.0 MiB per sequence"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CPU has 8192.0 MiB"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BatchedPrefillTest,
                         ::testing::ValuesIn(clef::test::model_presets()),
                         clef::test::preset_test_name);

}  // namespace
