#pragma once
// PNG encoding of an RGB image (lossless): how `clef verify` hands the engine an image it resized
// itself (the oracle's g256 / g448 arms), through the same request path as any client image.

#include <cstdint>
#include <vector>

#include "media/image.hpp"

namespace clef::media {

/// `image` as PNG file bytes (8-bit RGB, no interlace, libpng's default compression).
/// Throws clef::Error (internal) if libpng fails or the image is empty.
std::vector<std::uint8_t> encode_png(const RgbImage& image);

}  // namespace clef::media
