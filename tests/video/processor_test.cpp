// The video processor's size rule and pixel tensor (video/processor.hpp), against values worked
// out by hand from video_processing_qwen3_vl.py.

#include "video/processor.hpp"

#include <gtest/gtest.h>

#include "support/video_clips.hpp"
#include "util/error.hpp"

namespace clef::video {
namespace {

TEST(VideoSmartResize, FullHdTwentyFramesFitTheWholeVideoBudget) {
  // 20 x 1088 x 1920 > 786432 -> beta = sqrt(20 * 1080 * 1920 / 786432) = 7.26;
  // floor(1080 / 7.26 / 32) * 32 = 128, floor(1920 / 7.26 / 32) * 32 = 256.
  const auto s = video_smart_resize(20, 1080, 1920, 2, 32, 131072, 786432);
  EXPECT_EQ(s.height, 128);
  EXPECT_EQ(s.width, 256);
}

TEST(VideoSmartResize, SmallFramesAreScaledUpFirstThenToTheMinimum) {
  // 20 x 40: scale max(32/20, 32/40) = 1.6 -> 32 x 64; 4 * 32 * 64 = 8192 < 131072 ->
  // beta = sqrt(131072 / 8192) = 4 -> 128 x 256.
  const auto s = video_smart_resize(4, 20, 40, 2, 32, 131072, 786432);
  EXPECT_EQ(s.height, 128);
  EXPECT_EQ(s.width, 256);
}

TEST(VideoSmartResize, ExactlyTheMinimumIsKept) {
  const auto s = video_smart_resize(8, 128, 128, 2, 32, 131072, 786432);  // 8 * 128 * 128
  EXPECT_EQ(s.height, 128);
  EXPECT_EQ(s.width, 128);
}

TEST(VideoSmartResize, OneFrameAndExtremeAspectRatiosAreRefused) {
  try {
    video_smart_resize(1, 128, 128, 2, 32, 131072, 786432, "videos.0");
    FAIL() << "one frame accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "videos.0");
    EXPECT_NE(std::string(e.what()).find("t:1 must be larger than temporal_factor:2"),
              std::string::npos);
  }
  EXPECT_THROW(video_smart_resize(4, 32, 7000, 2, 32, 131072, 786432), Error);
}

TEST(PlanVideo, GroupsTokensAndTimestampsFollowTheRules) {
  VideoProcessorConfig c;
  // 10 frames at 4 fps: int(10 / 4 * 2) = 5 -> 5 frames: linspace(0, 9, 5) = 0 2 4 7 9
  // (2.25 -> 2, 4.5 -> 4, 6.75 -> 7); 5 * 128 * 128 < 131072 -> upscaled:
  // beta = sqrt(131072 / (5 * 16384)) = 1.265 -> ceil(5.06) * 32 = 192; 3 temporal patches.
  const VideoPlan p = plan_video(10, 4.0, 128, 128, c);
  EXPECT_EQ(p.indices, (std::vector<std::int64_t>{0, 2, 4, 7, 9}));
  EXPECT_EQ(p.resized_height, 192);
  EXPECT_EQ(p.resized_width, 192);
  EXPECT_EQ(p.groups, 3);
  EXPECT_EQ(p.tokens_per_group(), 36);  // (192 / 32)^2
  ASSERT_EQ(p.timestamps.size(), 3u);
  EXPECT_DOUBLE_EQ(p.timestamps[0], 0.25);   // (0 + 0.5) / 2
  EXPECT_DOUBLE_EQ(p.timestamps[1], 1.375);  // (1 + 1.75) / 2
  EXPECT_DOUBLE_EQ(p.timestamps[2], 2.25);   // 9 repeated
}

TEST(VideoPatches, EachTemporalSlotHoldsItsOwnFrame) {
  VideoProcessorConfig c;
  // Two 32x32 frames of one colour each: one temporal patch of 2 x 2 patches.
  const std::vector<media::RgbImage> frames = {test::solid_frame(32, 32, 0, 128, 255),
                                               test::solid_frame(32, 32, 255, 64, 1)};
  const vision::PatchTensor t = make_video_patches(frames, c);
  ASSERT_EQ(t.rows, 4);
  ASSERT_EQ(t.cols, 1536);
  // A row is C (R, G, B) x T (frame 0, frame 1) x 16 x 16.
  const auto value = [&](int row, int channel, int slot) {
    return t.data[static_cast<std::size_t>(row) * 1536 + static_cast<std::size_t>(channel) * 512 +
                  static_cast<std::size_t>(slot) * 256 + 17];
  };
  for (int row = 0; row < 4; ++row) {
    EXPECT_EQ(value(row, 0, 0), -1.0f);                          // R of frame 0: 0
    EXPECT_EQ(value(row, 0, 1), 1.0f);                           // R of frame 1: 255
    EXPECT_EQ(value(row, 1, 0), vision::normalize_sample(128));  // G of frame 0
    EXPECT_EQ(value(row, 1, 1), vision::normalize_sample(64));   // G of frame 1
    EXPECT_EQ(value(row, 2, 0), 1.0f);                           // B of frame 0: 255
    EXPECT_EQ(value(row, 2, 1), vision::normalize_sample(1));    // B of frame 1
  }
}

TEST(VideoPatches, RowsFollowMergeBlocksThenPatches) {
  VideoProcessorConfig c;
  // 64 x 32 frames (2 x 4 patches, 1 x 2 merge blocks): a pixel in patch (row 1, col 2)
  // lies in merge block 1 at (1, 0): row 1 * 4 + 1 * 2 + 0 = 6.
  media::RgbImage f = test::solid_frame(64, 32, 0, 0, 0);
  f.pixel(2 * 16 + 5, 1 * 16 + 3)[0] = 255;
  const vision::PatchTensor t = make_video_patches({f, f}, c);
  ASSERT_EQ(t.rows, 8);
  for (int row = 0; row < t.rows; ++row) {
    for (int slot = 0; slot < 2; ++slot) {
      const float v = t.data[static_cast<std::size_t>(row) * 1536 + slot * 256 + 3 * 16 + 5];
      EXPECT_EQ(v, row == 6 ? 1.0f : -1.0f) << "row " << row << " slot " << slot;
    }
  }
}

TEST(ProcessedFrames, AnOddCountRepeatsTheLastFrame) {
  VideoProcessorConfig c;
  VideoPlan plan;
  plan.resized_height = 32;
  plan.resized_width = 32;
  plan.groups = 2;
  const std::vector<media::RgbImage> sampled = {test::solid_frame(32, 32, 1, 1, 1),
                                                test::solid_frame(32, 32, 2, 2, 2),
                                                test::solid_frame(32, 32, 3, 3, 3)};
  const auto out = processed_frames(sampled, plan, c);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].rgb, sampled[2].rgb);
}

}  // namespace
}  // namespace clef::video
