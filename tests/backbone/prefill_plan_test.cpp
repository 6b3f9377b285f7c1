// The prefill plan of records with embedding (image) runs: batches never mix token ids and
// embeddings, cover every token once in order, have a layout fixed by the record, and never end a
// segment with a 1-token chunk; positions are laid out as libllama reads them.
#include <gtest/gtest.h>

#include <sched.h>

#include <vector>

#include "backbone/backbone.hpp"
#include "util/error.hpp"

namespace clef::backbone {
namespace {

std::vector<EmbeddingSpan> spans_of(std::initializer_list<std::pair<int, int>> runs) {
  std::vector<EmbeddingSpan> out;
  for (const auto& [first, n] : runs) out.push_back({first, n, {}});
  return out;
}

void expect_covering(const std::vector<PrefillBatch>& batches, int total,
                     const std::vector<EmbeddingSpan>& spans) {
  int at = 0;
  for (const PrefillBatch& b : batches) {
    EXPECT_EQ(b.start, at);
    EXPECT_GT(b.n_tokens, 0);
    bool inside = false;
    for (const EmbeddingSpan& s : spans) {
      if (b.start >= s.first && b.start < s.first + s.n_tokens) {
        inside = true;
        EXPECT_LE(b.start + b.n_tokens, s.first + s.n_tokens) << "batch crosses an image end";
      } else {
        EXPECT_TRUE(b.start + b.n_tokens <= s.first || b.start >= s.first + s.n_tokens)
            << "text batch at " << b.start << " runs into an image";
      }
    }
    EXPECT_EQ(b.embeddings, inside) << "batch at " << b.start;
    at += b.n_tokens;
  }
  EXPECT_EQ(at, total);
}

TEST(PrefillPlan, TextOnlyKeepsTheChunkLayout) {
  for (int total : {1, 2, 63, 64, 65, 128, 129, 300}) {
    const auto batches = prefill_batches(total, {}, 64);
    int start = 0;
    for (const PrefillBatch& b : batches) {
      EXPECT_EQ(b.start, start);
      EXPECT_EQ(b.n_tokens, chunk_length(total, start, 64));
      EXPECT_FALSE(b.embeddings);
      start += b.n_tokens;
    }
    EXPECT_EQ(start, total);
  }
}

TEST(PrefillPlan, SplitsAtImagesAndChunksEachSegment) {
  // Prefix of 36 (incl. <|vision_start|>), a 300-token image, 2 tokens between, a 65-token image
  // (a chunk + 1: must not end with a 1-token chunk), then 200 text tokens.
  const auto spans = spans_of({{36, 300}, {338, 65}});
  const int total = 338 + 65 + 200;
  const auto batches = prefill_batches(total, spans, 64);
  expect_covering(batches, total, spans);
  const std::vector<PrefillBatch> expected = {
      {0, 36, false},   {36, 64, true},   {100, 64, true}, {164, 64, true}, {228, 64, true},
      {292, 44, true},  {336, 2, false},  {338, 48, true}, {386, 17, true}, {403, 64, false},
      {467, 64, false}, {531, 64, false}, {595, 8, false}};
  EXPECT_EQ(batches, expected);
  for (const PrefillBatch& b : batches) EXPECT_GT(b.n_tokens, 1) << "1-token chunk at " << b.start;
}

TEST(PrefillPlan, CutsSplitTextSegmentsOnly) {
  // The state cache's points: the end of the first text segment and the end of the state.
  const auto spans = spans_of({{36, 100}});
  const int total = 136 + 150 + 80;
  const std::vector<int> cuts = {36, 136 + 150};  // 36 is an image start already
  const auto batches = prefill_batches(total, spans, 64, cuts);
  expect_covering(batches, total, spans);
  const std::vector<PrefillBatch> expected = {{0, 36, false},   {36, 64, true},   {100, 36, true},
                                              {136, 64, false}, {200, 64, false}, {264, 22, false},
                                              {286, 64, false}, {350, 16, false}};
  EXPECT_EQ(batches, expected);
  // Without images: a cut one token after a chunk boundary makes the first segment end with
  // (chunk - 16, 17), as any segment of chunk + 1 tokens.
  const std::vector<int> text_cut = {65};
  const std::vector<PrefillBatch> text = {{0, 48, false}, {48, 17, false}, {65, 35, false}};
  EXPECT_EQ(prefill_batches(100, {}, 64, text_cut), text);
  const std::vector<int> edges = {0, 100};
  EXPECT_EQ(prefill_batches(100, {}, 64, edges), prefill_batches(100, {}, 64));
  const std::vector<int> unordered = {50, 40};
  EXPECT_THROW(prefill_batches(100, {}, 64, unordered), Error);
  const std::vector<int> outside = {101};
  EXPECT_THROW(prefill_batches(100, {}, 64, outside), Error);
}

TEST(PrefillPlan, RefusesSpansOutOfOrderOrRange) {
  EXPECT_THROW(prefill_batches(100, spans_of({{50, 10}, {40, 5}}), 64), Error);
  EXPECT_THROW(prefill_batches(100, spans_of({{95, 10}}), 64), Error);
  EXPECT_THROW(prefill_batches(100, spans_of({{10, 0}}), 64), Error);
  EXPECT_THROW(prefill_batches(100, spans_of({{10, 20}, {25, 5}}), 64), Error);
}

TEST(PrefillPlan, PositionsAreOnePerTextTokenAndSectionMajorForEmbeddings) {
  std::vector<RopePosition> pos = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 0}, {2, 2, 3, 0},
                                   {2, 3, 2, 0}, {2, 3, 3, 0}, {4, 4, 4, 4}, {5, 5, 5, 5}};
  EXPECT_EQ(batch_positions({0, 2, false}, pos), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(batch_positions({2, 4, true}, pos),
            (std::vector<std::int32_t>{2, 2, 2, 2, 2, 2, 3, 3, 2, 3, 2, 3, 0, 0, 0, 0}));
  EXPECT_EQ(batch_positions({6, 2, false}, pos), (std::vector<std::int32_t>{4, 5}));
  // Plain positions when none are given.
  EXPECT_EQ(batch_positions({3, 3, false}, {}), (std::vector<std::int32_t>{3, 4, 5}));
  // A text token must have one position on every section (libllama broadcasts it).
  EXPECT_THROW(batch_positions({2, 1, false}, pos), Error);
  EXPECT_THROW(batch_positions({7, 2, false}, pos), Error);  // past the end
}

TEST(Threads, TheDefaultIsThePhysicalCoresThisProcessMayUse) {
  // Issue 19: SMT siblings count once; an explicit count wins.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const int cores = physical_cores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, CPU_COUNT(&allowed));
  BackboneParams p;
  EXPECT_EQ(resolved_threads(p), cores);
  p.threads = 3;
  EXPECT_EQ(resolved_threads(p), 3);
}

}  // namespace
}  // namespace clef::backbone
