#pragma once
// Decoded video frames to 8-bit RGB, the way the reference's video loader converts them
// (torchcodec's CPU path: libswscale, same size, bilinear flag, the frame's own colour matrix;
// see convert() for the range).

#include <string>

#include "media/image.hpp"

struct AVFrame;
struct SwsContext;

namespace clef::video {

/// Converts decoded frames to RGB24. Keeps one swscale context while the frames' size and format
/// stay the same. Not thread-safe.
class RgbConverter {
 public:
  RgbConverter() = default;
  ~RgbConverter();
  RgbConverter(const RgbConverter&) = delete;
  RgbConverter& operator=(const RgbConverter&) = delete;

  /// The frame's pixels as RGB (width x height, rows top to bottom). The YUV -> RGB matrix is the
  /// frame's colorspace (BT.601 when unspecified); the source range is swscale's default for the
  /// pixel format, or the frame's stated range when its width is not a multiple of 32 (where
  /// torchcodec converts through a scale filter); RGB sources are repacked without change.
  /// Throws clef::Error (400 naming `param`) for a pixel format swscale cannot convert.
  media::RgbImage convert(const AVFrame& frame, const std::string& param);

 private:
  SwsContext* context_ = nullptr;  // owned; freed with sws_freeContext
};

}  // namespace clef::video
