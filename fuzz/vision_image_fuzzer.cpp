// libFuzzer target: image bytes as a request carries them - format sniffing, the header probe
// (PNG IHDR, libjpeg's jpeg_read_header, WebPGetInfo), decoding (libpng, libjpeg, libwebp) and
// EXIF orientation. Any input must decode or be refused with clef::Error; nothing else may
// escape, crash or trip a sanitizer, and when both the probe and the decoder accept an image
// they agree on its size up to orientation (the token budget is checked on the probe's size:
// issue 13 finding 3 was a JPEG whose probe and decoder disagreed).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "media/decode.hpp"
#include "media/probe.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  (void)clef::media::sniff_image_format(bytes);
  const auto probed = clef::media::probe_stored_size(bytes);
  // Small limits keep one execution fast; the limits' own checks are exercised all the same.
  clef::media::DecodeLimits limits;
  limits.max_pixels = 1 << 20;
  try {
    const clef::media::RgbImage image = clef::media::decode_image(bytes, limits, "images.0");
    if (image.width <= 0 || image.height <= 0) std::abort();
    if (image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) std::abort();
    if (probed) {
      const bool same = probed->width == image.width && probed->height == image.height;
      const bool turned = probed->width == image.height && probed->height == image.width;
      if (!same && !turned) std::abort();
    }
  } catch (const clef::Error&) {
    // a refusal is a valid outcome
  }
  return 0;
}
