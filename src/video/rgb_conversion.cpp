#include "video/rgb_conversion.hpp"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
}

#include "video/errors.hpp"

namespace clef::video {

RgbConverter::~RgbConverter() {
  sws_freeContext(context_);
}

vision::RgbImage RgbConverter::convert(const AVFrame& frame, const std::string& param) {
  const auto format = static_cast<AVPixelFormat>(frame.format);
  if (frame.width <= 0 || frame.height <= 0 || sws_isSupportedInput(format) <= 0) {
    throw bad_video("a video frame has a pixel format that cannot be converted to RGB", param);
  }
  context_ =
      sws_getCachedContext(context_, frame.width, frame.height, format, frame.width, frame.height,
                           AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
  if (context_ == nullptr) {
    throw bad_video("a video frame could not be set up for RGB conversion", param);
  }
  // The frame's matrix (unspecified: swscale's default, BT.601) and range; RGB out full range.
  const int colorspace = frame.colorspace == AVCOL_SPC_UNSPECIFIED
                             ? SWS_CS_DEFAULT
                             : static_cast<int>(frame.colorspace);
  const int* coefficients = sws_getCoefficients(colorspace);
  const int src_full = frame.color_range == AVCOL_RANGE_JPEG ? 1 : 0;
  sws_setColorspaceDetails(context_, coefficients, src_full, coefficients, 1, 0, 1 << 16, 1 << 16);
  vision::RgbImage out(frame.width, frame.height);
  std::uint8_t* dst[4] = {out.rgb.data(), nullptr, nullptr, nullptr};
  int dst_stride[4] = {frame.width * 3, 0, 0, 0};
  const int rows =
      sws_scale(context_, frame.data, frame.linesize, 0, frame.height, dst, dst_stride);
  if (rows != frame.height) throw bad_video("a video frame could not be converted to RGB", param);
  return out;
}

}  // namespace clef::video
