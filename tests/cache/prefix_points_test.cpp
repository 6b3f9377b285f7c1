// A record's snapshot points: the end of the fixed prefix (or of the prefix and
// <|vision_start|> before an image) and the end of the state, on multiples of 16 from the start
// of their text segment, never leaving a 1-token segment.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cache/prefix_points.hpp"

namespace clef::cache {
namespace {

record::Record text_record(std::size_t prefix, std::size_t state_end, std::size_t total) {
  record::Record r;
  r.ids.assign(total, 1);
  r.prefix_tokens = prefix;
  r.state_span = {prefix, state_end};
  return r;
}

TEST(SnapshotPoints, PrefixEndAndStateEndOfATextRecordDownToTheRowAlignment) {
  // 36 and 500 are not multiples of 16: the cuts go to 32 and 496, where one pass's repacked row
  // blocks start too.
  EXPECT_EQ(snapshot_points(text_record(36, 500, 620)), (std::vector<int>{32, 496}));
  EXPECT_EQ(state_end_point(text_record(36, 500, 620)), 496);
  EXPECT_EQ(snapshot_points(text_record(48, 512, 620)), (std::vector<int>{48, 512}));
  EXPECT_EQ(state_end_point(text_record(48, 512, 620)), 512);
}

TEST(SnapshotPoints, AOneTokenStateKeepsOnlyThePrefixPoint) {
  EXPECT_EQ(snapshot_points(text_record(48, 49, 120)), (std::vector<int>{48}));
  // An empty state: both points are the same.
  EXPECT_EQ(snapshot_points(text_record(48, 48, 120)), (std::vector<int>{48}));
  // Aligned, a short state's end falls on the prefix point.
  EXPECT_EQ(snapshot_points(text_record(36, 40, 120)), (std::vector<int>{32}));
}

TEST(SnapshotPoints, WithImagesThePrefixPointIsTheFirstImageStart) {
  record::Record r = text_record(36, 0, 700);
  // <|vision_start|> at 36, 300 image tokens at 37.., <|vision_end|> at 337, "\n" at 338, then
  // the state.
  r.images.push_back({37, 300});
  r.state_span = {339, 600};
  // The state end in the text segment after the image block [37, 337): 263 tokens into it, cut
  // at 256, a multiple of 16 from the segment's start.
  EXPECT_EQ(snapshot_points(r), (std::vector<int>{37, 593}));
  EXPECT_EQ(state_end_point(r), 593);
  // A state of one token after the image block: its end goes down to the image block's end.
  r.state_span = {339, 340};
  EXPECT_EQ(snapshot_points(r), (std::vector<int>{37, 337}));
  EXPECT_EQ(state_end_point(r), 337);
  // 16 tokens into the segment [337, 354) before a second image: the cut at 353 would leave
  // [353, 354) alone, so it is dropped.
  r.images.push_back({354, 20});
  r.state_span = {339, 353};
  EXPECT_EQ(snapshot_points(r), (std::vector<int>{37}));
  EXPECT_EQ(state_end_point(r), 0);
}

TEST(SnapshotPoints, PointsAtTheRecordsEndsAreDropped) {
  EXPECT_EQ(snapshot_points(text_record(0, 0, 10)), (std::vector<int>{}));
  EXPECT_EQ(snapshot_points(text_record(36, 96, 96)), (std::vector<int>{32}));
  EXPECT_EQ(snapshot_points(text_record(36, 100, 100)), (std::vector<int>{32}));
  // Aligned down to 32, the state end of a 33-token record would leave one token after it.
  EXPECT_EQ(snapshot_points(text_record(20, 33, 33)), (std::vector<int>{16}));
  EXPECT_EQ(snapshot_points(text_record(16, 33, 34)), (std::vector<int>{16, 32}));
}

TEST(SnapshotPlan, PointsAfterTheResumedPartNotCachedYetAndCheckpointsInsideTheState) {
  const std::vector<int> points = {32, 496};
  std::vector<int> boundaries;
  for (int b = 0; b < 620; b += 64) boundaries.push_back(b);
  const auto none = [](int) { return false; };
  SnapshotPlan plan = plan_snapshots(points, none, boundaries, 0, 36, 496);
  EXPECT_EQ(plan.snapshot_at, (std::vector<int>{32, 496}));
  // Boundaries after the state's start (36) and before its end (496), at most kMaxCheckpoints:
  // 64 .. 448 are 7, all kept.
  EXPECT_EQ(plan.checkpoint_at, (std::vector<int>{64, 128, 192, 256, 320, 384, 448}));
  // The prefix is cached: only the state's end is taken; resumed at 192, checkpoints after it.
  plan = plan_snapshots(
      points, [](int p) { return p == 32; }, boundaries, 192, 36, 496);
  EXPECT_EQ(plan.snapshot_at, (std::vector<int>{496}));
  EXPECT_EQ(plan.checkpoint_at, (std::vector<int>{256, 320, 384, 448}));
  // The state's end is cached already: no snapshot of it, so no checkpoints either.
  plan = plan_snapshots(
      points, [](int p) { return p == 496; }, boundaries, 0, 36, 496);
  EXPECT_EQ(plan.snapshot_at, (std::vector<int>{32}));
  EXPECT_TRUE(plan.checkpoint_at.empty());
  // Nothing under kMinCachedTokens, nothing at or before the resumed part.
  plan = plan_snapshots(std::vector<int>{16, 496}, none, boundaries, 496, 20, 496);
  EXPECT_TRUE(plan.snapshot_at.empty());
}

TEST(SnapshotPlan, ALongStateKeepsEvenlySpacedCheckpointsAndAlwaysTheLast) {
  std::vector<int> boundaries;
  for (int b = 0; b < 4200; b += 64) boundaries.push_back(b);
  const SnapshotPlan plan = plan_snapshots(
      std::vector<int>{32, 4096}, [](int) { return false; }, boundaries, 0, 36, 4096);
  ASSERT_FALSE(plan.checkpoint_at.empty());
  EXPECT_LE(plan.checkpoint_at.size(), kMaxCheckpoints);
  EXPECT_EQ(plan.checkpoint_at.back(), 4032);  // the last boundary before the state's end
  EXPECT_TRUE(std::is_sorted(plan.checkpoint_at.begin(), plan.checkpoint_at.end()));
}

}  // namespace
}  // namespace clef::cache
