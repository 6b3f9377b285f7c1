#pragma once
// EXIF orientation, applied as the reference applies it: transformers' load_image() calls
// PIL.ImageOps.exif_transpose(image) before image.convert("RGB"), so a photo stored sideways
// with an orientation tag reaches the model upright.

#include <cstdint>
#include <span>

#include "media/image.hpp"

namespace clef::media {

/// The Orientation tag (0x0112) of IFD0 in a TIFF-structured EXIF block (as found in a JPEG APP1
/// segment, a PNG eXIf chunk or a WebP EXIF chunk); a leading "Exif\0\0" is skipped. Returns 1
/// (upright) when the block is malformed, has no such tag, or holds a value outside 1..8.
int exif_orientation(std::span<const std::uint8_t> exif) noexcept;

/// `image` transposed for EXIF `orientation` exactly as PIL.ImageOps.exif_transpose does:
/// 2 mirror left-right, 3 rotate 180, 4 mirror top-bottom, 5 transpose, 6 rotate 90 clockwise
/// (PIL ROTATE_270), 7 transverse, 8 rotate 90 counter-clockwise (PIL ROTATE_90); 1 and anything
/// else return the image unchanged. 5..8 swap width and height.
RgbImage apply_exif_orientation(RgbImage image, int orientation);

}  // namespace clef::media
