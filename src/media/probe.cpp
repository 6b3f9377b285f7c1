#include "media/probe.hpp"

#include <webp/decode.h>

#include <climits>

#include "media/decode.hpp"
#include "media/decoders.hpp"

namespace clef::media {
namespace {

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

std::optional<StoredSize> sized(std::uint64_t w, std::uint64_t h) {
  if (w == 0 || h == 0 || w > INT_MAX || h > INT_MAX) return std::nullopt;
  return StoredSize{static_cast<int>(w), static_cast<int>(h)};
}

std::optional<StoredSize> png_size(std::span<const std::uint8_t> b) {
  // Signature (8), IHDR length (4) "IHDR" (4), width (4), height (4).
  if (b.size() < 24 || be32(&b[8]) != 13 || b[12] != 'I' || b[13] != 'H' || b[14] != 'D' ||
      b[15] != 'R') {
    return std::nullopt;
  }
  return sized(be32(&b[16]), be32(&b[20]));
}

std::optional<StoredSize> webp_size(std::span<const std::uint8_t> b) {
  int w = 0, h = 0;
  if (!WebPGetInfo(b.data(), b.size(), &w, &h)) return std::nullopt;
  return sized(static_cast<std::uint64_t>(w), static_cast<std::uint64_t>(h));
}

}  // namespace

std::optional<StoredSize> probe_stored_size(std::span<const std::uint8_t> bytes) noexcept {
  const auto format = sniff_image_format(bytes);
  if (!format) return std::nullopt;
  switch (*format) {
    case ImageFormat::png:
      return png_size(bytes);
    case ImageFormat::jpeg:
      return detail::jpeg_stored_size(bytes);  // libjpeg's own marker reader
    case ImageFormat::webp:
      return webp_size(bytes);
  }
  return std::nullopt;
}

}  // namespace clef::media
