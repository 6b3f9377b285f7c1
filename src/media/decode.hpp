#pragma once
// Image decoding to the RGB bytes the reference sees: PIL.Image.open(bytes), then
// ImageOps.exif_transpose, then .convert("RGB") (transformers' load_image(); the processor's
// convert_to_rgb is then a no-op). PNG, JPEG and WebP only (decision contract section 1).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "media/image.hpp"
#include "media/limits.hpp"

namespace clef::media {

enum class ImageFormat { png, jpeg, webp };

/// The format named by the first bytes (PNG signature, JPEG SOI, RIFF....WEBP), or nullopt.
std::optional<ImageFormat> sniff_image_format(std::span<const std::uint8_t> bytes) noexcept;

/// Decodes an encoded PNG, JPEG or WebP to RGB as Pillow's convert("RGB") gives it:
/// - alpha is dropped, not composited; grey gives R=G=B; palette images give their colours;
/// - 16-bit PNG: RGB(A) and grey+alpha keep the high byte of each sample (Pillow's ";16B"
///   raw modes); 16-bit grey is clipped, min(v, 255) (Pillow's I;16 -> RGB conversion);
/// - EXIF orientation (JPEG APP1, PNG eXIf before or after the image data, WebP EXIF) is applied.
/// Refusals (clef::Error, `param` names the field): 413 when bytes exceed
/// limits.max_encoded_bytes or the header's width*height exceeds limits.max_pixels (checked
/// before any pixel is decoded); 415 for other formats (GIF, BMP, TIFF, ...), CMYK/YCCK JPEG
/// and animated WebP; 400 for bytes that are not a valid image (corrupt, truncated, 0 pixels).
RgbImage decode_image(std::span<const std::uint8_t> bytes, const DecodeLimits& limits = {},
                      const std::string& param = {});

/// The decoders' size check, also usable on a size read from a header alone: throws clef::Error
/// 400 for a zero dimension and 413 (image_too_large) when width * height exceeds
/// limits.max_pixels.
void check_dimensions(std::uint64_t width, std::uint64_t height, const DecodeLimits& limits);

/// parse_data_uri() then decode_image(): the whole path of one request image.
RgbImage decode_data_uri(std::string_view uri, const DecodeLimits& limits = {},
                         const std::string& param = {});

}  // namespace clef::media
