#pragma once
// Limits applied to an image before it is decoded, so that an oversized upload or a
// decompression bomb is refused from its header alone.

#include <cstddef>
#include <cstdint>

namespace clef::media {

/// Refusal thresholds for one image. The image count per request is the request module's job.
struct DecodeLimits {
  /// Largest encoded image (the bytes of the file, after base64 decoding), in bytes.
  std::size_t max_encoded_bytes = std::size_t{20} * 1024 * 1024;  // 20 MiB
  /// Largest decoded picture, width * height, checked from the header before decoding.
  std::uint64_t max_pixels = std::uint64_t{64} * 1024 * 1024;  // 64 Mpx
};

}  // namespace clef::media
