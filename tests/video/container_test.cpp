// Request videos through FFmpeg's libraries (video/container.hpp): clips made in the test with
// FFmpeg's own encoders, read back; and the refusals (corrupt, unsupported, too long, too large,
// too slow).

#include "video/container.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "support/status_of.hpp"
#include "support/video_clips.hpp"
#include "util/error.hpp"

namespace clef::video {
namespace {

using clef::test::status_of;
TEST(VideoContainer, LosslessFramesComeBackExactlyInOrder) {
  const test::ClipSpec spec = test::square_clip(9, 3);
  VideoContainer c(test::write_clip(spec), VideoLimits{}, "videos.0");
  EXPECT_EQ(c.info().width, 64);
  EXPECT_EQ(c.info().height, 48);
  EXPECT_EQ(c.info().codec, "ffv1");
  const ContentScan scan = c.scan();
  EXPECT_EQ(scan.frames, 9);
  EXPECT_NEAR(scan.average_fps, 3.0, 1e-9);
  const std::vector<std::int64_t> wanted = {0, 2, 2, 8};
  const auto frames = c.decode(wanted);
  ASSERT_EQ(frames.size(), 4u);
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    EXPECT_EQ(frames[k].rgb, test::moving_square(64, 48, static_cast<int>(wanted[k])).rgb)
        << "frame " << wanted[k];
  }
  // Decoding again starts from the first frame.
  EXPECT_EQ(c.decode(std::vector<std::int64_t>{1})[0].rgb, test::moving_square(64, 48, 1).rgb);
}

TEST(VideoContainer, LossyCodecsDecodeCloseToTheirSource) {
  for (const auto& [container, codec] : std::vector<std::pair<std::string, std::string>>{
           {"mp4", "libx264"}, {"mp4", "mpeg4"}, {"webm", "libvpx"}, {"avi", "mjpeg"}}) {
    test::ClipSpec spec = test::square_clip(6, 6, 64, 64);
    spec.container = container;
    spec.codec = codec;
    spec.pixel_format = codec == "mjpeg" ? "yuvj420p" : "yuv420p";
    spec.frame = [](int i) { return test::solid_frame(64, 64, 40 * i, 200 - 30 * i, 128); };
    SCOPED_TRACE(container + " / " + codec);
    VideoContainer c(test::write_clip(spec), VideoLimits{}, "videos.0");
    EXPECT_EQ(c.scan().frames, 6) << codec;
    const auto frames = c.decode(std::vector<std::int64_t>{0, 5});
    ASSERT_EQ(frames.size(), 2u);
    // The centre pixel of frame 5: (200, 50, 128) within codec error.
    const std::uint8_t* p = frames[1].pixel(32, 32);
    EXPECT_NEAR(p[0], 200, 6) << codec;
    EXPECT_NEAR(p[1], 50, 6) << codec;
    EXPECT_NEAR(p[2], 128, 6) << codec;
  }
}

TEST(VideoContainer, WebmWithoutAFrameCountIsCountedFromItsPackets) {
  test::ClipSpec spec = test::square_clip(7, 5, 64, 64);
  spec.container = "webm";
  spec.codec = "libvpx";
  spec.pixel_format = "yuv420p";
  VideoContainer c(test::write_clip(spec), VideoLimits{}, "videos.0");
  EXPECT_EQ(c.info().header_frames, 0);
  const ContentScan scan = c.scan();
  EXPECT_EQ(scan.frames, 7);
  EXPECT_NEAR(scan.average_fps, 5.0, 1e-6);
}

TEST(VideoContainer, VariableFrameRateAveragesOverTheStreamSpan) {
  test::ClipSpec spec = test::square_clip(5, 10);
  spec.pts_ms = {0, 100, 150, 700, 800};  // the last frame lasts 1 ms in Matroska's view
  VideoContainer c(test::write_clip(spec), VideoLimits{}, "videos.0");
  const ContentScan scan = c.scan();
  EXPECT_EQ(scan.frames, 5);
  EXPECT_NEAR(scan.begin_s, 0.0, 1e-9);
  EXPECT_GT(scan.end_s, 0.8 - 1e-9);
  EXPECT_NEAR(scan.average_fps, 5 / (scan.end_s - scan.begin_s), 1e-9);
  EXPECT_EQ(c.decode(std::vector<std::int64_t>{3})[0].rgb, test::moving_square(64, 48, 3).rgb);
}

TEST(VideoContainer, CorruptAndTruncatedFilesAreRefusedWith400) {
  std::vector<std::uint8_t> bytes = test::write_clip(test::square_clip(6, 3));
  EXPECT_EQ(status_of([&] {
              VideoContainer c(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 40), {},
                               "videos.0");
              c.decode(std::vector<std::int64_t>{5});
            }),
            400);
  std::vector<std::uint8_t> noise(4096);
  for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<std::uint8_t>(i * 7919);
  EXPECT_EQ(status_of([&] { VideoContainer c(noise, {}, "videos.0"); }), 400);
  EXPECT_EQ(status_of([&] { VideoContainer c({}, {}, "videos.0"); }), 400);
  // Damage the middle of the frame data: a decode error or a frame count short of 5.
  std::vector<std::uint8_t> damaged = bytes;
  for (std::size_t i = damaged.size() / 3; i < damaged.size(); ++i) damaged[i] = 0xff;
  const int status = status_of([&] {
    VideoContainer c(damaged, {}, "videos.0");
    c.decode(std::vector<std::int64_t>{5});
  });
  EXPECT_EQ(status, 400);
}

TEST(VideoContainer, UnsupportedCodecsAndContainersAre415) {
  test::ClipSpec spec = test::square_clip(3, 3);
  spec.codec = "huffyuv";
  spec.pixel_format = "yuv422p";
  try {
    VideoContainer c(test::write_clip(spec), {}, "videos.0");
    FAIL() << "huffyuv accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 415);
    EXPECT_EQ(e.code(), "unsupported_video");
    EXPECT_EQ(e.param(), "videos.0");
  }
  spec = test::square_clip(3, 3);
  spec.container = "nut";
  EXPECT_EQ(status_of([&] { VideoContainer c(test::write_clip(spec), {}, "videos.0"); }), 415);
}

TEST(VideoContainer, LimitsAreCheckedBeforeDecoding) {
  const std::vector<std::uint8_t> bytes = test::write_clip(test::square_clip(12, 4));  // 3 s, 64x48
  VideoLimits limits;
  limits.max_duration_s = 2;
  EXPECT_EQ(status_of([&] { VideoContainer(bytes, limits, "videos.0").scan(); }), 413);
  limits = {};
  limits.max_frame_pixels = 64 * 48 - 1;
  EXPECT_EQ(status_of([&] { VideoContainer c(bytes, limits, "videos.0"); }), 413);
  limits = {};
  limits.max_encoded_bytes = bytes.size() - 1;
  EXPECT_EQ(status_of([&] { VideoContainer c(bytes, limits, "videos.0"); }), 413);
  limits = {};
  limits.max_stream_frames = 10;
  EXPECT_EQ(status_of([&] { VideoContainer(bytes, limits, "videos.0").scan(); }), 413);
  limits = {};
  limits.decode_timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(status_of([&] {
              VideoContainer c(bytes, limits, "videos.0");
              c.decode(std::vector<std::int64_t>{11});
            }),
            413);
}

TEST(VideoContainer, AFramePastTheEndIsRefused) {
  VideoContainer c(test::write_clip(test::square_clip(4, 4)), {}, "videos.0");
  EXPECT_EQ(status_of([&] { c.decode(std::vector<std::int64_t>{4}); }), 400);
}

}  // namespace
}  // namespace clef::video

namespace clef::video {
namespace {

/// Damaged copies of real clips (bytes flipped, cut, or overwritten at spread-out offsets, for
/// each container): every one is either decoded or refused with a 4xx, never a crash or a hang.
TEST(VideoContainer, DamagedClipsAreDecodedOrRefusedNeverWorse) {
  std::vector<std::vector<std::uint8_t>> clips;
  for (const auto& [container, codec, format] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"matroska", "ffv1", "bgr0"},
           {"mp4", "libx264", "yuv420p"},
           {"webm", "libvpx", "yuv420p"},
           {"avi", "mjpeg", "yuvj420p"}}) {
    test::ClipSpec spec;
    spec.container = container;
    spec.codec = codec;
    spec.pixel_format = format;
    spec.frames = 6;
    spec.fps = 6;
    spec.width = 48;
    spec.height = 32;
    spec.frame = [](int i) { return test::moving_square(48, 32, i); };
    clips.push_back(test::write_clip(spec));
  }
  VideoLimits limits;
  limits.decode_timeout = std::chrono::milliseconds(5000);
  int refused = 0;
  int decoded = 0;
  for (const auto& clip : clips) {
    for (int k = 1; k <= 40; ++k) {
      std::vector<std::uint8_t> bytes = clip;
      const std::size_t at = bytes.size() * static_cast<std::size_t>(k) / 41;
      switch (k % 4) {
        case 0:
          bytes.resize(at);  // cut
          break;
        case 1:
          for (std::size_t i = at; i < std::min(bytes.size(), at + 8); ++i) bytes[i] ^= 0xff;
          break;
        case 2:
          for (std::size_t i = at; i < std::min(bytes.size(), at + 4); ++i) bytes[i] = 0x7f;
          break;
        default:
          bytes[at] = static_cast<std::uint8_t>(bytes[at] + 1);
          break;
      }
      try {
        VideoContainer c(std::move(bytes), limits, "videos.0");
        const ContentScan scan = c.scan();
        std::vector<std::int64_t> all;
        for (std::int64_t i = 0; i < std::min<std::int64_t>(scan.frames, 6); ++i) all.push_back(i);
        const auto frames = c.decode(all);
        for (const auto& f : frames) {
          ASSERT_EQ(f.rgb.size(), static_cast<std::size_t>(f.width) * f.height * 3);
        }
        ++decoded;
      } catch (const Error& e) {
        EXPECT_GE(e.status(), 400) << e.what();
        EXPECT_LT(e.status(), 500) << e.what();
        EXPECT_EQ(e.param(), "videos.0");
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(decoded, 0);
}

}  // namespace
}  // namespace clef::video
