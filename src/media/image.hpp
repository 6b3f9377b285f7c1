#pragma once
// RgbImage: the decoded picture every later step works on, 8-bit RGB, rows top to bottom.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace clef::media {

/// An 8-bit RGB image: `rgb` holds height rows of width pixels, 3 bytes (R, G, B) each,
/// row-major with no padding (size = width * height * 3).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;

  RgbImage() = default;
  /// A width x height image filled with zeros.
  RgbImage(int w, int h)
      : width(w), height(h), rgb(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3) {}

  std::uint8_t* pixel(int x, int y) {
    return rgb.data() + (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                         static_cast<std::size_t>(x)) *
                            3;
  }
  const std::uint8_t* pixel(int x, int y) const {
    return rgb.data() + (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                         static_cast<std::size_t>(x)) *
                            3;
  }
};

}  // namespace clef::media
