// A record's snapshot points: the end of the fixed prefix (or of the prefix and
// <|vision_start|> before an image) and the end of the state, never leaving a 1-token segment.
#include <gtest/gtest.h>

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

TEST(SnapshotPoints, PrefixEndAndStateEndOfATextRecord) {
  EXPECT_EQ(snapshot_points(text_record(36, 500, 620)), (std::vector<int>{36, 500}));
}

TEST(SnapshotPoints, AOneTokenStateKeepsOnlyThePrefixPoint) {
  EXPECT_EQ(snapshot_points(text_record(36, 37, 120)), (std::vector<int>{36}));
  // An empty state: both points are the same.
  EXPECT_EQ(snapshot_points(text_record(36, 36, 120)), (std::vector<int>{36}));
}

TEST(SnapshotPoints, WithImagesThePrefixPointIsTheFirstImageStart) {
  record::Record r = text_record(36, 0, 700);
  // <|vision_start|> at 36, 300 image tokens at 37.., <|vision_end|> at 337, "\n" at 338, then
  // the state.
  r.images.push_back({37, 300});
  r.state_span = {339, 600};
  EXPECT_EQ(snapshot_points(r), (std::vector<int>{37, 600}));
  // A state of one token after the image block: the segment [337, 340) before its end has
  // <|vision_end|>, "\n" and the state token, so the point stays.
  r.state_span = {339, 340};
  EXPECT_EQ(snapshot_points(r), (std::vector<int>{37, 340}));
  // The state end right after the image span's end would leave [337, 338) alone.
  r.state_span = {337, 338};
  EXPECT_EQ(snapshot_points(r), (std::vector<int>{37}));
}

TEST(SnapshotPoints, PointsAtTheRecordsEndsAreDropped) {
  EXPECT_EQ(snapshot_points(text_record(0, 0, 10)), (std::vector<int>{}));
  EXPECT_EQ(snapshot_points(text_record(36, 100, 100)), (std::vector<int>{36}));
}

}  // namespace
}  // namespace clef::cache
