#pragma once
// An image's stored size read from its header alone, so the image-token budget of a request can be
// checked before any pixel is decoded.

#include <cstdint>
#include <optional>
#include <span>

namespace clef::media {

/// Width and height as stored (before EXIF orientation, which may swap them; the processor's token
/// count is the same either way, as smart_resize treats height and width alike).
struct StoredSize {
  int width = 0;
  int height = 0;
};

/// The size in a PNG IHDR, a JPEG's frame header as libjpeg's jpeg_read_header finds it (its own
/// marker reader: clef once parsed markers itself and was fooled by "FF 00" into a fake frame
/// header inside a comment), or a WebP header (WebPGetInfo);
/// nullopt for anything else, a truncated or malformed header, or a zero or over-int side
/// (decode_image then gives the precise error). Reads headers only.
std::optional<StoredSize> probe_stored_size(std::span<const std::uint8_t> bytes) noexcept;

}  // namespace clef::media
