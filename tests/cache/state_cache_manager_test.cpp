// The state cache's policy (cache/state_cache_manager.hpp) on plain records: where a layout is
// cut, what a record resumes from, what is kept after a decision and after an abandoned prefill.
#include "cache/state_cache_manager.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace clef::cache {
namespace {

constexpr int kEmbd = 4;

record::Record text_record(std::size_t prefix, std::size_t state_end, std::size_t total) {
  record::Record r;
  r.ids.assign(total, 1);
  for (std::size_t i = 0; i < total; ++i) r.ids[i] = static_cast<std::int32_t>(i % 97);
  r.prefix_tokens = prefix;
  r.state_span = {prefix, state_end};
  return r;
}

backbone::BackboneParams params(bool flash_attention) {
  backbone::BackboneParams p;
  p.chunk_tokens = 128;
  p.parallel = 2;
  p.flash_attention = flash_attention;
  return p;
}

/// Hidden states of `rec` with one snapshot of backbone memory at each of `at`.
backbone::HiddenStates hidden_of(const record::Record& rec, const std::vector<int>& at) {
  backbone::HiddenStates h;
  h.rows = static_cast<int>(rec.ids.size());
  h.n_embd = kEmbd;
  h.data.assign(rec.ids.size() * kEmbd, 0.5f);
  for (int tokens : at) h.snapshots.push_back({tokens, backbone::SnapshotBytes(64, 7)});
  return h;
}

TEST(StateCacheManager, WithoutACacheTheLayoutIsCutOnlyForFlashAttention) {
  const record::Record rec = text_record(48, 512, 620);
  StateCacheManager off(0, params(false), kEmbd, std::chrono::milliseconds(0));
  RecordCachePlan plain;
  off.plan(rec, {}, {}, plain);
  EXPECT_TRUE(plain.points.empty());
  EXPECT_TRUE(plain.options.cuts.empty());
  EXPECT_TRUE(plain.snapshot_at.empty());
  EXPECT_EQ(plain.resumed(), 0);
  StateCacheManager flash(0, params(true), kEmbd, std::chrono::milliseconds(0));
  RecordCachePlan cut;
  flash.plan(rec, {}, {}, cut);
  EXPECT_EQ(cut.points, (std::vector<int>{48, 512}));
  EXPECT_TRUE(cut.snapshot_at.empty()) << "no cache: nothing to keep";
  EXPECT_EQ(cut.options.progress_max_bytes, 0u);
}

TEST(StateCacheManager, ADecidedRecordIsResumedAtItsStateEnd) {
  const record::Record rec = text_record(48, 512, 620);
  StateCacheManager manager(1 << 20, params(false), kEmbd, std::chrono::milliseconds(100));
  RecordCachePlan first;
  manager.plan(rec, {}, {}, first);
  EXPECT_EQ(first.points, (std::vector<int>{48, 512}));
  EXPECT_EQ(first.state_end, 512);
  EXPECT_EQ(first.snapshot_at, (std::vector<int>{48, 512}));
  EXPECT_EQ(first.options.progress_max_bytes, (1u << 20) / 2) << "a share per sequence";
  backbone::HiddenStates hidden = hidden_of(rec, {48, 512});
  manager.keep_decided(rec, first, hidden);
  RecordCachePlan again;
  manager.plan(rec, {}, {}, again);
  EXPECT_EQ(again.resumed(), 512);
  EXPECT_EQ(again.options.resume_rows.size(), 512u * kEmbd);
  EXPECT_TRUE(again.snapshot_at.empty()) << "both points are kept already";
  EXPECT_EQ(manager.stats().entries, 2u);
}

TEST(StateCacheManager, AnAbandonedPrefillKeepsOnlyWhatItDecoded) {
  const record::Record rec = text_record(48, 512, 620);
  StateCacheManager manager(1 << 20, params(false), kEmbd, std::chrono::milliseconds(100));
  RecordCachePlan plan;
  manager.plan(rec, {}, {}, plan);
  // Stopped after 300 tokens: the prefix point is kept, a snapshot past what it decoded is not.
  manager.keep_abandoned(rec, plan, hidden_of(rec, {48, 512}), 300);
  RecordCachePlan again;
  manager.plan(rec, {}, {}, again);
  EXPECT_EQ(again.resumed(), 48);
  EXPECT_EQ(manager.stats().entries, 1u);
}

TEST(StateCacheManager, ImagesInsideTheResumedPrefixNeedNoTowerRows) {
  record::Record rec = text_record(36, 0, 700);
  rec.images.push_back({37, 300});
  rec.state_span = {339, 600};
  const std::vector<backbone::EmbeddingSpan> blocks = {{37, 300, {}}};
  const std::vector<std::string> digests = {"abc"};
  StateCacheManager manager(1 << 22, params(false), kEmbd, std::chrono::milliseconds(100));
  RecordCachePlan first;
  manager.plan(rec, blocks, digests, first);
  EXPECT_EQ(first.first_image_to_encode(), 0u);
  EXPECT_TRUE(first.digests_before(37).empty());
  EXPECT_EQ(first.digests_before(38).size(), 1u);
  backbone::HiddenStates hidden = hidden_of(rec, first.snapshot_at);
  manager.keep_decided(rec, first, hidden);
  RecordCachePlan again;
  manager.plan(rec, blocks, digests, again);
  EXPECT_EQ(again.resumed(), 593);
  EXPECT_EQ(again.first_image_to_encode(), 1u);
  // Another image at the same place: only the prefix before it is shared.
  const std::vector<std::string> other = {"def"};
  RecordCachePlan different;
  manager.plan(rec, blocks, other, different);
  EXPECT_EQ(different.resumed(), 37);
  EXPECT_EQ(different.first_image_to_encode(), 0u);
}

}  // namespace
}  // namespace clef::cache
