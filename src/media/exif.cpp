#include "media/exif.hpp"

#include <cstring>

namespace clef::media {
namespace {

struct TiffReader {
  std::span<const std::uint8_t> data;
  bool little = true;

  bool has(std::size_t offset, std::size_t n) const {
    return offset <= data.size() && n <= data.size() - offset;
  }
  std::uint32_t u16(std::size_t o) const {
    return little ? (data[o] | (data[o + 1] << 8)) : ((data[o] << 8) | data[o + 1]);
  }
  std::uint32_t u32(std::size_t o) const {
    return little ? (u16(o) | (u16(o + 2) << 16)) : ((u16(o) << 16) | u16(o + 2));
  }
};

}  // namespace

int exif_orientation(std::span<const std::uint8_t> exif) noexcept {
  static constexpr std::uint8_t kPrefix[6] = {'E', 'x', 'i', 'f', 0, 0};
  if (exif.size() >= 6 && std::memcmp(exif.data(), kPrefix, 6) == 0) exif = exif.subspan(6);
  TiffReader r{exif};
  if (!r.has(0, 8)) return 1;
  if (exif[0] == 'I' && exif[1] == 'I') {
    r.little = true;
  } else if (exif[0] == 'M' && exif[1] == 'M') {
    r.little = false;
  } else {
    return 1;
  }
  if (r.u16(2) != 42) return 1;
  const std::size_t ifd = r.u32(4);
  if (!r.has(ifd, 2)) return 1;
  const std::size_t count = r.u16(ifd);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t entry = ifd + 2 + i * 12;
    if (!r.has(entry, 12)) return 1;
    if (r.u16(entry) != 0x0112) continue;
    const std::uint32_t type = r.u16(entry + 2);
    std::uint32_t value = 0;
    if (type == 3) {  // SHORT, stored in the first two bytes of the value field
      value = r.u16(entry + 8);
    } else if (type == 4) {  // LONG
      value = r.u32(entry + 8);
    } else {
      return 1;
    }
    return (value >= 1 && value <= 8) ? static_cast<int>(value) : 1;
  }
  return 1;
}

RgbImage apply_exif_orientation(RgbImage image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  const int w = image.width;
  const int h = image.height;
  const bool swap = orientation >= 5;
  RgbImage out(swap ? h : w, swap ? w : h);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int sx = x;
      int sy = y;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;  // FLIP_LEFT_RIGHT
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;  // ROTATE_180
        case 4:
          sy = h - 1 - y;
          break;  // FLIP_TOP_BOTTOM
        case 5:
          sx = y;
          sy = x;
          break;  // TRANSPOSE
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;  // ROTATE_270 (clockwise)
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;  // TRANSVERSE
        case 8:
          sx = w - 1 - y;
          sy = x;
          break;  // ROTATE_90 (counter-clockwise)
        default:
          break;
      }
      std::memcpy(out.pixel(x, y), image.pixel(sx, sy), 3);
    }
  }
  return out;
}

}  // namespace clef::media
