#include "video/rgb_conversion.hpp"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
}

#include "media/errors.hpp"

namespace clef::video {

RgbConverter::~RgbConverter() {
  sws_freeContext(context_);
}

media::RgbImage RgbConverter::convert(const AVFrame& frame, const std::string& param) {
  const auto format = static_cast<AVPixelFormat>(frame.format);
  if (frame.width <= 0 || frame.height <= 0 || sws_isSupportedInput(format) <= 0) {
    throw media::kVideoMedia.invalid(
        "a video frame has a pixel format that cannot be converted to RGB", param);
  }
  context_ =
      sws_getCachedContext(context_, frame.width, frame.height, format, frame.width, frame.height,
                           AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
  if (context_ == nullptr) {
    throw media::kVideoMedia.invalid("a video frame could not be set up for RGB conversion", param);
  }
  // As torchcodec's CPU path: the frame's own matrix (sws_getCoefficients of its colorspace;
  // unspecified is BT.601). The source range is swscale's default for the pixel format (yuvj*:
  // full, else limited) when the width is a multiple of 32 (torchcodec's swscale path); other
  // widths go through its "scale=W:H:sws_flags=bilinear" filter graph, whose scale filter takes
  // the frame's own range when the frame states one.
  int* inv_table = nullptr;
  int* table = nullptr;
  int src_range = 0;
  int dst_range = 0;
  int brightness = 0;
  int contrast = 0;
  int saturation = 0;
  if (sws_getColorspaceDetails(context_, &inv_table, &src_range, &table, &dst_range, &brightness,
                               &contrast, &saturation) >= 0) {
    if (frame.width % 32 != 0 && frame.color_range != AVCOL_RANGE_UNSPECIFIED) {
      src_range = frame.color_range == AVCOL_RANGE_JPEG ? 1 : 0;
    }
    const int* coefficients = sws_getCoefficients(static_cast<int>(frame.colorspace));
    sws_setColorspaceDetails(context_, coefficients, src_range, coefficients, dst_range, brightness,
                             contrast, saturation);
  }
  media::RgbImage out(frame.width, frame.height);
  std::uint8_t* dst[4] = {out.rgb.data(), nullptr, nullptr, nullptr};
  int dst_stride[4] = {frame.width * 3, 0, 0, 0};
  const int rows =
      sws_scale(context_, frame.data, frame.linesize, 0, frame.height, dst, dst_stride);
  if (rows != frame.height)
    throw media::kVideoMedia.invalid("a video frame could not be converted to RGB", param);
  return out;
}

}  // namespace clef::video
