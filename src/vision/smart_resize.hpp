#pragma once
// The processor's choice of resized size (transformers models/qwen2_vl/
// image_processing_qwen2_vl.py smart_resize, as of transformers 5.x).

#include <cstdint>

namespace clef::vision {

struct ResizedSize {
  int height = 0;
  int width = 0;
};

/// smart_resize(height, width, factor, min_pixels, max_pixels), computed in double exactly as
/// the Python does it:
///   refuse max(h, w) / min(h, w) > 200;
///   h_bar = round(h / factor) * factor, w_bar likewise (round half to even);
///   if h_bar * w_bar > max_pixels: beta = sqrt(h * w / max_pixels),
///       h_bar = max(factor, floor(h / beta / factor) * factor), w_bar likewise;
///   elif h_bar * w_bar < min_pixels: beta = sqrt(min_pixels / (h * w)),
///       h_bar = ceil(h * beta / factor) * factor, w_bar likewise.
/// (No minimum-side check: transformers 5 dropped the old "must be larger than factor" error.)
/// Throws clef::Error (400, invalid_image) for a non-positive side or an aspect ratio above
/// 200, and for a result whose side does not fit an int.
ResizedSize smart_resize(int height, int width, int factor, std::int64_t min_pixels,
                         std::int64_t max_pixels);

}  // namespace clef::vision
