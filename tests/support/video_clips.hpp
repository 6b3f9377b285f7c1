#pragma once
// Test support: video clips made with FFmpeg's own encoders and muxers (libavformat /
// libavcodec / libswscale), so the video tests read real files of known content.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "media/image.hpp"

namespace clef::test {

/// What to write.
struct ClipSpec {
  std::string container = "matroska";  ///< muxer name: matroska, webm, mp4, avi
  std::string codec = "ffv1";          ///< encoder name: ffv1, mpeg4, libx264, libvpx, ...
  /// Pixel format the encoder gets ("bgr0" keeps FFV1 lossless RGB; "yuv420p" for the others).
  std::string pixel_format = "bgr0";
  int width = 64;
  int height = 64;
  int frames = 8;
  int fps = 4;  ///< frames per second (the stream's time base is 1/fps unless pts is given)
  /// Presentation times in milliseconds, one per frame (variable frame rate); empty: i / fps.
  std::vector<std::int64_t> pts_ms;
  /// The RGB content of frame i.
  std::function<media::RgbImage(int i)> frame;
};

/// Encodes `spec` into a file in memory (through a temporary file) and returns its bytes.
/// Throws std::runtime_error when FFmpeg refuses the combination.
std::vector<std::uint8_t> write_clip(const ClipSpec& spec);

/// A width x height frame of one colour.
media::RgbImage solid_frame(int width, int height, std::uint8_t r, std::uint8_t g, std::uint8_t b);

/// A lossless clip (FFV1 in Matroska, the spec's defaults) of `frames` moving_square frames of
/// width x height at `fps`.
ClipSpec square_clip(int frames = 8, int fps = 4, int width = 64, int height = 48);

/// Frame i of a test pattern: a colour that changes per frame as background and a 8x8 white
/// square that moves 4 pixels right per frame.
media::RgbImage moving_square(int width, int height, int i);

}  // namespace clef::test
