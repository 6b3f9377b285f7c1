// WebP (lossy, lossless, with or without alpha) through libwebp's one-call decoder into RGB,
// which equals the RGB channels of the RGBA picture Pillow decodes (alpha dropped). Animated
// WebP is refused. The EXIF chunk is found by walking the RIFF container.
#include <webp/decode.h>

#include <cstring>
#include <string>

#include "media/decoders.hpp"
#include "media/errors.hpp"
#include "media/exif.hpp"

namespace clef::media::detail {
namespace {

std::uint32_t le32(const std::uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

/// Orientation from the "EXIF" chunk of a RIFF/WEBP container, 1 if there is none.
int webp_orientation(std::span<const std::uint8_t> b) {
  std::size_t pos = 12;  // after "RIFF" size "WEBP"
  while (pos + 8 <= b.size()) {
    const std::uint32_t size = le32(b.data() + pos + 4);
    if (size > b.size() - pos - 8) break;
    if (std::memcmp(b.data() + pos, "EXIF", 4) == 0) {
      return exif_orientation(b.subspan(pos + 8, size));
    }
    pos += 8 + size + (size & 1);
  }
  return 1;
}

}  // namespace

Decoded decode_webp(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(bytes.data(), bytes.size(), &features) != VP8_STATUS_OK) {
    throw media::kImageMedia.invalid("WebP image is invalid");
  }
  check_dimensions(static_cast<std::uint64_t>(features.width),
                   static_cast<std::uint64_t>(features.height), limits);
  if (features.has_animation != 0) {
    throw media::kImageMedia.unsupported(
        "animated WebP images are not supported; send a still image");
  }
  Decoded d;
  d.image = RgbImage(features.width, features.height);
  const int stride = features.width * 3;
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), d.image.rgb.data(), d.image.rgb.size(),
                        stride) == nullptr) {
    throw media::kImageMedia.invalid("WebP image is invalid or truncated");
  }
  d.orientation = webp_orientation(bytes);
  return d;
}

}  // namespace clef::media::detail
