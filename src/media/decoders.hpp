#pragma once
// Internal: one decoder per format, called by decode_image() after sniffing. Each returns the
// RGB pixels as stored plus the EXIF orientation it found; decode_image() applies it.

#include <cstdint>
#include <optional>
#include <span>

#include "media/decode.hpp"
#include "media/image.hpp"
#include "media/limits.hpp"
#include "media/probe.hpp"

namespace clef::media::detail {

struct Decoded {
  RgbImage image;
  int orientation = 1;  ///< EXIF orientation 1..8 (1 when absent)
};

Decoded decode_png(std::span<const std::uint8_t> bytes, const DecodeLimits& limits);
Decoded decode_jpeg(std::span<const std::uint8_t> bytes, const DecodeLimits& limits);
/// The frame size libjpeg's own header reader (jpeg_read_header) finds, as decode_jpeg will see
/// it; nullopt when libjpeg refuses the header. Decodes no pixels.
std::optional<StoredSize> jpeg_stored_size(std::span<const std::uint8_t> bytes) noexcept;
Decoded decode_webp(std::span<const std::uint8_t> bytes, const DecodeLimits& limits);

}  // namespace clef::media::detail
