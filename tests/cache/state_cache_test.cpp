// The state cache's store: the longest cached prefix at one of the record's snapshot points,
// images told apart by their digests, least recently used entries evicted to stay within the
// byte budget, and the counters /metrics shows.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "cache/state_cache.hpp"

namespace clef::cache {
namespace {

std::vector<std::int32_t> iota_ids(int n, int from = 0) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

/// `ids` and 10 more tokens: a record that a prefix of `ids` can start.
std::vector<std::int32_t> longer(std::vector<std::int32_t> ids) {
  for (int i = 0; i < 10; ++i) ids.push_back(50000 + i);
  return ids;
}

CachedPrefix prefix(const std::vector<std::int32_t>& ids, std::size_t n,
                    std::vector<std::string> digests = {}, std::size_t payload = 1000) {
  CachedPrefix e;
  e.ids.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n));
  e.image_digests = std::move(digests);
  e.memory.tokens = static_cast<int>(n);
  e.memory.data.assign(payload, 7);
  e.rows.assign(n * 4, 0.5f);
  return e;
}

TEST(StateCache, FindsTheLongestPrefixAtARecordPoint) {
  StateCache cache(1 << 20);
  const auto ids = iota_ids(200);
  cache.insert(prefix(ids, 36));
  cache.insert(prefix(ids, 120));
  const std::vector<int> both = {36, 120};
  auto hit = cache.find(ids, both, {}, {});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.tokens, 120);
  // 120 is not a point of this record (its state ends elsewhere): the prefix at 36 is used.
  const std::vector<int> only_36 = {36, 150};
  hit = cache.find(ids, only_36, {}, {}, 36);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.tokens, 36);
  // Another record that shares only the first 36 tokens.
  auto other = ids;
  other[50] = 9999;
  hit = cache.find(other, both, {}, {});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.tokens, 36);
  other[3] = 9999;
  EXPECT_FALSE(cache.find(other, both, {}, {}));
  // A record no longer than a prefix does not resume from it (nothing would be left to prefill).
  EXPECT_FALSE(cache.find(std::vector<std::int32_t>(ids.begin(), ids.begin() + 36),
                          std::vector<int>{36}, {}, {}));
  EXPECT_FALSE(cache.find(std::vector<std::int32_t>(ids.begin(), ids.begin() + 30), both, {}, {}));
  const StateCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.prefix_hits, 1u) << "only the lookup told its fixed prefix counts";
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.reused_tokens, 120u + 36u + 36u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.insertions, 2u);
}

TEST(StateCache, ARecordThatSharesPartOfAnEntryResumesFromItsCheckpoint) {
  StateCache cache(1 << 20);
  const auto a = iota_ids(200);
  CachedPrefix entry = prefix(a, 200);
  for (int c : {64, 128}) {
    entry.checkpoints.push_back(std::make_shared<const backbone::MemorySnapshot>(
        backbone::MemorySnapshot{c, backbone::SnapshotBytes(10, 1), true}));
  }
  cache.insert(std::move(entry));
  auto b = iota_ids(260);
  b[150] = -1;  // an edit after token 150
  const std::vector<int> boundaries = {0, 36, 64, 128, 190, 254};
  CacheHit hit = cache.find(b, boundaries, {}, {});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.tokens, 128);
  ASSERT_NE(hit.checkpoint, nullptr);
  EXPECT_EQ(hit.checkpoint->tokens, 128);
  // 128 is not where b's layout has a batch boundary: the checkpoint at 64 is.
  const std::vector<int> other_layout = {0, 36, 64, 100, 164};
  hit = cache.find(b, other_layout, {}, {});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.tokens, 64);
  // The whole entry is used (no checkpoint) when the record extends it at a boundary.
  const std::vector<int> at_200 = {0, 36, 64, 128, 200};
  auto c = iota_ids(300);
  hit = cache.find(c, at_200, {}, {});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.tokens, 200);
  EXPECT_EQ(hit.checkpoint, nullptr);
  b[20] = -1;  // an edit before the first checkpoint
  EXPECT_FALSE(cache.find(b, boundaries, {}, {}));
}

TEST(StateCache, ImagesInsideThePrefixMustHaveTheSameDigests) {
  StateCache cache(1 << 20);
  const auto ids = iota_ids(400);
  cache.insert(prefix(ids, 300, {"aaaa"}));
  const std::vector<int> points = {37, 300};
  const std::vector<std::size_t> starts = {37};
  const std::vector<std::string> same = {"aaaa"};
  const std::vector<std::string> other = {"bbbb"};
  EXPECT_TRUE(cache.find(ids, points, starts, same));
  EXPECT_FALSE(cache.find(ids, points, starts, other)) << "same ids, other pixels";
  EXPECT_FALSE(cache.find(ids, points, {}, {})) << "a record without that image";
  // An image that starts after the prefix does not take part.
  cache.insert(prefix(ids, 37));
  const std::vector<std::size_t> late = {350};
  auto hit = cache.find(ids, points, late, other);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.tokens, 37);
  EXPECT_TRUE(cache.contains(std::span<const std::int32_t>(ids).first(300), same));
  EXPECT_FALSE(cache.contains(std::span<const std::int32_t>(ids).first(300), other));
}

TEST(StateCache, EvictsTheLeastRecentlyUsedToStayWithinTheBudget) {
  const auto a = iota_ids(100, 0);
  const auto b = iota_ids(100, 1000);
  const auto c = iota_ids(100, 2000);
  const std::size_t one = prefix(a, 100).bytes();
  StateCache cache(2 * one + one / 2);  // room for two entries
  cache.insert(prefix(a, 100));
  cache.insert(prefix(b, 100));
  const std::vector<int> points = {100};
  EXPECT_TRUE(cache.find(longer(a), points, {}, {}));  // a is now the most recently used
  cache.insert(prefix(c, 100));                        // evicts b
  EXPECT_TRUE(cache.find(longer(a), points, {}, {}));
  EXPECT_FALSE(cache.find(longer(b), points, {}, {}));
  EXPECT_TRUE(cache.find(longer(c), points, {}, {}));
  StateCacheStats s = cache.stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.bytes, 2 * one);
  EXPECT_LE(s.bytes, s.budget);
  // An equal entry is not kept twice; one over the whole budget is not kept at all.
  cache.insert(prefix(a, 100));
  EXPECT_EQ(cache.stats().entries, 2u);
  cache.insert(prefix(b, 100, {}, 10 * one));
  s = cache.stats();
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.evictions, 1u);
}

TEST(StateCache, CheckpointsCountInTheBudget) {
  // A break test found checkpoints held outside the budget (3x the bytes reported on shape-0.8b).
  const auto a = iota_ids(100);
  CachedPrefix plain = prefix(a, 100);
  const std::size_t without = plain.bytes();
  plain.checkpoints.push_back(std::make_shared<const backbone::MemorySnapshot>(
      backbone::MemorySnapshot{64, backbone::SnapshotBytes(50000, 1), true}));
  EXPECT_GE(plain.bytes(), without + 50000);
  StateCache cache(without + 1000);  // room for the entry without its checkpoint only
  cache.insert(std::move(plain));
  EXPECT_EQ(cache.stats().entries, 0u) << "over the budget with its checkpoint: not kept";
}

TEST(StateCache, AnEntryFoundStaysValidAfterItIsEvicted) {
  const auto a = iota_ids(100);
  const std::size_t one = prefix(a, 100).bytes();
  StateCache cache(one);
  cache.insert(prefix(a, 100));
  const std::vector<int> points = {100};
  const auto hit = cache.find(longer(a), points, {}, {});
  ASSERT_TRUE(hit);
  cache.insert(prefix(iota_ids(100, 500), 100));
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(hit.entry->ids, a);
  EXPECT_EQ(hit.entry->memory.data.size(), 1000u);
}

TEST(StateCache, ABudgetOfZeroKeepsNothingAndCountsNothing) {
  StateCache cache(0);
  EXPECT_FALSE(cache.enabled());
  const auto a = iota_ids(100);
  cache.insert(prefix(a, 100));
  const std::vector<int> points = {100};
  EXPECT_FALSE(cache.find(longer(a), points, {}, {}));
  const StateCacheStats s = cache.stats();
  EXPECT_EQ(s.entries + s.hits + s.misses + s.insertions + s.bytes + s.budget, 0u);
}

TEST(ImageDigest, IsTheSha256OfSizeAndPixels) {
  const std::vector<std::uint8_t> rgb(2 * 3 * 3, 0);
  // sha256("2x3:" + 18 zero bytes), computed with Python's hashlib.
  EXPECT_EQ(image_digest(2, 3, rgb),
            "2ecec42c1a2e1f2a41760e6700c904aa871fff151c0c48cb84c513b9f1e9a31b");
  EXPECT_NE(image_digest(3, 2, rgb), image_digest(2, 3, rgb)) << "same bytes, other shape";
}

}  // namespace
}  // namespace clef::cache
