#include "vision/smart_resize.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "media/errors.hpp"

namespace clef::vision {
namespace {

std::int64_t to_side(double multiples, int factor) {
  // multiples is already integral (nearbyint/floor/ceil of a double)
  const double side = multiples * factor;
  if (!(side <= static_cast<double>(std::numeric_limits<int>::max()))) {
    throw media::kImageMedia.invalid("image is too large to resize");
  }
  return static_cast<std::int64_t>(side);
}

}  // namespace

ResizedSize smart_resize(int height, int width, int factor, std::int64_t min_pixels,
                         std::int64_t max_pixels) {
  if (height <= 0 || width <= 0)
    throw media::kImageMedia.invalid("image has no pixels (width or height is 0)");
  const double h = height;
  const double w = width;
  const double ratio = std::max(h, w) / std::min(h, w);
  if (ratio > 200.0) {
    throw media::kImageMedia.invalid(
        "image aspect ratio " + std::to_string(std::max(height, width)) + ":" +
        std::to_string(std::min(height, width)) + " is too extreme; it must be at most 200:1");
  }
  // Python's round() rounds half to even, as nearbyint does in the default rounding mode.
  std::int64_t h_bar = to_side(std::nearbyint(h / factor), factor);
  std::int64_t w_bar = to_side(std::nearbyint(w / factor), factor);
  const double area = static_cast<double>(static_cast<std::int64_t>(height) * width);
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(area / static_cast<double>(max_pixels));
    h_bar = std::max<std::int64_t>(factor, to_side(std::floor(h / beta / factor), factor));
    w_bar = std::max<std::int64_t>(factor, to_side(std::floor(w / beta / factor), factor));
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / area);
    h_bar = to_side(std::ceil(h * beta / factor), factor);
    w_bar = to_side(std::ceil(w * beta / factor), factor);
  }
  return ResizedSize{static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

}  // namespace clef::vision
