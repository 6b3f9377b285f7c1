// Frame sampling and timestamps (video/sampling.hpp), with expectations worked out by hand from
// the reference's rules (Qwen3VLVideoProcessor.sample_frames,
// Qwen3VLProcessor._calculate_timestamps).

#include "video/sampling.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace clef::video {
namespace {

TEST(SampleFrames, TenSecondsAtThirtyFpsGiveTwentyFrames) {
  // int(300 / 30 * 2) = 20; linspace(0, 299, 20): step 299/19 = 15.737, i * step rounded.
  const auto idx = sample_frame_indices(300, 30.0, SamplingParams{});
  const std::vector<std::int64_t> expected = {0,   16,  31,  47,  63,  79,  94,  110, 126, 142,
                                              157, 173, 189, 205, 220, 236, 252, 268, 283, 299};
  EXPECT_EQ(idx, expected);
}

TEST(SampleFrames, ShortClipsAreRaisedToMinFramesButNotPastTheirLength) {
  // int(10 / 30 * 2) = 0 -> max(0, 4) = 4 -> min(4, 768, 10) = 4; linspace(0, 9, 4) = 0 3 6 9.
  EXPECT_EQ(sample_frame_indices(10, 30.0, SamplingParams{}),
            (std::vector<std::int64_t>{0, 3, 6, 9}));
  // 3 frames: min(4, 768, 3) = 3 -> 0 1 2.
  EXPECT_EQ(sample_frame_indices(3, 30.0, SamplingParams{}), (std::vector<std::int64_t>{0, 1, 2}));
  // 1 frame: one index (the processor then refuses it: t:1 < temporal_factor 2).
  EXPECT_EQ(sample_frame_indices(1, 30.0, SamplingParams{}), (std::vector<std::int64_t>{0}));
}

TEST(SampleFrames, LinspaceRoundsHalfToEven) {
  // linspace(0, 5, 5) = 0, 1.25, 2.5, 3.75, 5 -> 0 1 2 4 5 (2.5 rounds to 2).
  SamplingParams p;
  p.num_frames = 5;
  EXPECT_EQ(sample_frame_indices(6, 30.0, p), (std::vector<std::int64_t>{0, 1, 2, 4, 5}));
}

TEST(SampleFrames, MaxFramesCapsAndFpsOverrides) {
  SamplingParams p;
  p.fps = 10;  // int(300 / 30 * 10) = 100
  EXPECT_EQ(sample_frame_indices(300, 30.0, p).size(), 100u);
  p.max_frames = 8;
  EXPECT_EQ(sample_frame_indices(300, 30.0, p).size(), 8u);
}

TEST(SampleFrames, WithoutSamplingEveryFrameIsKept) {
  SamplingParams p;
  p.do_sample_frames = false;
  EXPECT_EQ(sample_frame_indices(5, 30.0, p), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
}

TEST(SampleFrames, RefusesFpsWithNumFramesAndEmptyVideos) {
  SamplingParams p;
  p.fps = 2;
  p.num_frames = 4;
  EXPECT_THROW(sample_frame_indices(30, 30.0, p), Error);
  EXPECT_THROW(sample_frame_indices(0, 30.0, SamplingParams{}), Error);
  EXPECT_THROW(sample_frame_indices(30, 0.0, SamplingParams{}), Error);
}

TEST(PatchTimestamps, PairsAreAveragedAndAnOddCountRepeatsTheLastFrame) {
  // 0 3 | 6 9 at 30 fps: (0 + 0.1) / 2 = 0.05, (0.2 + 0.3) / 2 = 0.25.
  const auto even = patch_timestamps({0, 3, 6, 9}, 30.0, 2);
  ASSERT_EQ(even.size(), 2u);
  EXPECT_DOUBLE_EQ(even[0], 0.05);
  EXPECT_DOUBLE_EQ(even[1], 0.25);
  // 0 3 6 -> 0 3 | 6 6: 0.05 and 0.2.
  const auto odd = patch_timestamps({0, 3, 6}, 30.0, 2);
  ASSERT_EQ(odd.size(), 2u);
  EXPECT_DOUBLE_EQ(odd[1], 0.2);
}

TEST(PatchTimestamps, TextIsFormattedLikePythonsOneDecimal) {
  EXPECT_EQ(timestamp_text(0.05), "<0.1 seconds>");  // 0.05 is just above the tie in binary
  EXPECT_EQ(timestamp_text(0.25), "<0.2 seconds>");  // an exact tie rounds to even
  EXPECT_EQ(timestamp_text(0.35), "<0.3 seconds>");  // 0.35 is just below the tie
  EXPECT_EQ(timestamp_text(2.25), "<2.2 seconds>");
  EXPECT_EQ(timestamp_text(0.26666666666666666), "<0.3 seconds>");
  // The 10 s clip above: frames 0 and 16 at 30 fps.
  const auto t = patch_timestamps(sample_frame_indices(300, 30.0, SamplingParams{}), 30.0, 2);
  ASSERT_EQ(t.size(), 10u);
  EXPECT_EQ(timestamp_text(t[0]), "<0.3 seconds>");
  EXPECT_EQ(timestamp_text(t[1]), "<1.3 seconds>");
  EXPECT_EQ(timestamp_text(t[9]), "<9.7 seconds>");
}

}  // namespace
}  // namespace clef::video
