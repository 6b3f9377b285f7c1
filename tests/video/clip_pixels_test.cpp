// Pixel tensors, frame indices and timestamps of generated clips, through the whole path (FFmpeg
// decoding, the loader's frame count and rate, sampling, the video smart resize, padding,
// patches), against values worked out by hand from the rules of decision contract section 8.

#include <gtest/gtest.h>

#include <array>

#include "support/status_of.hpp"
#include "support/video_clips.hpp"
#include "util/error.hpp"
#include "video/container.hpp"
#include "video/processor.hpp"
#include "vision/patches.hpp"

namespace clef::video {
namespace {

/// Frame i of the colour clip: one colour per frame.
std::array<std::uint8_t, 3> colour(int i) {
  return {static_cast<std::uint8_t>(10 + 30 * i), static_cast<std::uint8_t>(200 - 20 * i),
          static_cast<std::uint8_t>(7 * i)};
}

struct Processed {
  VideoPlan plan;
  vision::PatchTensor pixels;
};

Processed process(const test::ClipSpec& spec, const VideoProcessorConfig& config = {}) {
  VideoContainer c(test::write_clip(spec), VideoLimits{}, "videos.0");
  const ContentScan scan = c.scan();
  Processed out;
  out.plan = plan_video(scan.frames, scan.average_fps, c.info().height, c.info().width, config,
                        "videos.0");
  const auto frames = processed_frames(c.decode(out.plan.indices), out.plan, config);
  out.pixels = make_video_patches(frames, config);
  return out;
}

TEST(ClipPixels, SolidColoursChangingPerFrameAtAnOddSizeAndCount) {
  test::ClipSpec spec;
  spec.frames = 7;
  spec.fps = 4;
  spec.width = 50;
  spec.height = 30;
  spec.frame = [](int i) {
    const auto c = colour(i);
    return test::solid_frame(50, 30, c[0], c[1], c[2]);
  };
  const Processed p = process(spec);
  // 7 frames at 4 fps (1.75 s): int(7 / 4 * 2) = 3 -> 4 frames, linspace(0, 6, 4) = 0 2 4 6.
  EXPECT_EQ(p.plan.indices, (std::vector<std::int64_t>{0, 2, 4, 6}));
  // 30 < 32: scaled by 32/30 to 32 x 53; 4 * 32 * 64 < 131,072: beta = 4.3955 ->
  // ceil(32 * beta / 32) * 32 = 160, ceil(53 * beta / 32) * 32 = 256.
  EXPECT_EQ(p.plan.resized_height, 160);
  EXPECT_EQ(p.plan.resized_width, 256);
  EXPECT_EQ(p.plan.groups, 2);
  EXPECT_EQ(p.plan.tokens_per_group(), 40);  // 5 x 8
  // (0 + 0.5) / 2 = 0.25 -> "<0.2 seconds>" (a tie, to even); (1 + 1.5) / 2 = 1.25 -> "<1.2".
  EXPECT_EQ(timestamp_text(p.plan.timestamps[0]), "<0.2 seconds>");
  EXPECT_EQ(timestamp_text(p.plan.timestamps[1]), "<1.2 seconds>");
  // 2 groups x 10 x 16 patches; every value of a slot is its frame's colour, normalized.
  ASSERT_EQ(p.pixels.rows, 320);
  ASSERT_EQ(p.pixels.cols, 1536);
  for (int row = 0; row < p.pixels.rows; ++row) {
    const int group = row / 160;
    for (int ch = 0; ch < 3; ++ch) {
      for (int slot = 0; slot < 2; ++slot) {
        const float expected = vision::normalize_sample(colour(4 * group + 2 * slot)[ch]);
        for (int k = 0; k < 256; ++k) {
          ASSERT_EQ(p.pixels.data[static_cast<std::size_t>(row) * 1536 + ch * 512 + slot * 256 + k],
                    expected)
              << "row " << row << " channel " << ch << " slot " << slot;
        }
      }
    }
  }
}

TEST(ClipPixels, AMovingShapeKeepsItsPlaceInThePatchOrder) {
  // 64 x 64 frames: 2 frames sampled of 3 at 1 fps (int(3 / 1 * 2) = 6 -> min(.., 3) = 3 frames:
  // 0 1 2, padded with 2). 3 * 64 * 64 < 131,072: beta = sqrt(131072 / 12288) = 3.27 ->
  // ceil(6.53) * 32 = 224 per side; the square (8 x 8 at x = 4i, y = 4) scales by 3.5.
  const Processed p = process(test::square_clip(3, 1, 64, 64));
  EXPECT_EQ(p.plan.indices, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(p.plan.resized_height, 224);
  EXPECT_EQ(p.plan.groups, 2);
  // The second group holds frame 2 twice (the padding repeats the last frame).
  const std::size_t per_group = 14u * 14u * 1536u;
  for (std::size_t r = 0; r < 14u * 14u; ++r) {
    for (int ch = 0; ch < 3; ++ch) {
      const float* row = p.pixels.data.data() + per_group + r * 1536 + ch * 512;
      for (int k = 0; k < 256; ++k) ASSERT_EQ(row[k], row[256 + k]);
    }
  }
  // Patch (row 1, column 1) of frame 0 holds the white square's middle (pixels 14..28 at 3.5x):
  // in merge block 0 at (1, 1), row 3; its centre pixel is white (normalized 1.0) in slot 0.
  EXPECT_EQ(p.pixels.data[3 * 1536 + 0 * 512 + 0 * 256 + 8 * 16 + 8], 1.0f);
}

TEST(ClipPixels, OneFrameIsRefusedAsTheReferenceDoes) {
  test::ClipSpec spec;
  spec.frames = 1;
  spec.fps = 4;
  spec.frame = [](int) { return test::solid_frame(64, 64, 1, 2, 3); };
  EXPECT_EQ(test::status_of([&] { process(spec); }), 400);
}

TEST(ClipPixels, VariableFrameRateDatesPatchesWithTheAverageRate) {
  // 6 frames at 0, 100, 200, 1000, 1100, 1200 ms; Matroska's last frame lasts the default
  // 1 / 10 s: span 1.3 s, rate 6 / 1.3. Sampling: int(6 / (6 / 1.3) * 2) = 2 -> 4 frames:
  // linspace(0, 5, 4) = 0 2 3 5 (1.67 -> 2, 3.33 -> 3).
  test::ClipSpec spec = test::square_clip(6, 10);
  spec.pts_ms = {0, 100, 200, 1000, 1100, 1200};
  VideoContainer c(test::write_clip(spec), VideoLimits{}, "videos.0");
  const ContentScan scan = c.scan();
  ASSERT_EQ(scan.frames, 6);
  const VideoPlan plan = plan_video(scan.frames, scan.average_fps, 48, 64, VideoProcessorConfig{});
  EXPECT_EQ(plan.indices, (std::vector<std::int64_t>{0, 2, 3, 5}));
  // Timestamps use the average rate, not the frames' own times (as the reference does).
  EXPECT_DOUBLE_EQ(plan.timestamps[0], (0 + 2 / scan.average_fps) / 2);
}

}  // namespace
}  // namespace clef::video
