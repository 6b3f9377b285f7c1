#include "media/decode.hpp"

#include <cstring>

#include "media/data_uri.hpp"
#include "media/decoders.hpp"
#include "media/errors.hpp"
#include "media/exif.hpp"

namespace clef::media {
namespace {

bool starts_with(std::span<const std::uint8_t> b, std::size_t at, std::string_view magic) {
  return b.size() >= at + magic.size() &&
         std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
}

/// Names formats Pillow would open but clef does not decode, for a 415 that says what it saw.
const char* other_format_name(std::span<const std::uint8_t> b) {
  if (starts_with(b, 0, "GIF87a") || starts_with(b, 0, "GIF89a")) return "GIF";
  if (starts_with(b, 0, "BM")) return "BMP";
  if (starts_with(b, 0, std::string_view("II*\0", 4)) ||
      starts_with(b, 0, std::string_view("MM\0*", 4)))
    return "TIFF";
  if (starts_with(b, 4, "ftyp")) return "HEIF/AVIF";
  if (starts_with(b, 0, std::string_view("\0\0\1\0", 4))) return "ICO";
  return nullptr;
}

}  // namespace

void check_dimensions(std::uint64_t width, std::uint64_t height, const DecodeLimits& limits) {
  if (width == 0 || height == 0)
    throw media::kImageMedia.invalid("image has no pixels (width or height is 0)");
  if (width > limits.max_pixels || height > limits.max_pixels ||
      width * height > limits.max_pixels) {
    throw media::kImageMedia.too_large("image is " + std::to_string(width) + "x" +
                                       std::to_string(height) + " pixels; the limit is " +
                                       std::to_string(limits.max_pixels) + " pixels");
  }
}

std::optional<ImageFormat> sniff_image_format(std::span<const std::uint8_t> bytes) noexcept {
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n")) return ImageFormat::png;
  if (starts_with(bytes, 0, "\xFF\xD8\xFF")) return ImageFormat::jpeg;
  if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP")) return ImageFormat::webp;
  return std::nullopt;
}

RgbImage decode_image(std::span<const std::uint8_t> bytes, const DecodeLimits& limits,
                      const std::string& param) {
  try {
    if (bytes.size() > limits.max_encoded_bytes) {
      throw media::kImageMedia.too_large("image is " + std::to_string(bytes.size()) +
                                         " bytes; the limit is " +
                                         std::to_string(limits.max_encoded_bytes));
    }
    const auto format = sniff_image_format(bytes);
    if (!format) {
      if (const char* name = other_format_name(bytes)) {
        throw media::kImageMedia.unsupported(std::string("image format ") + name +
                                             " is not supported; use PNG, JPEG or WebP");
      }
      throw media::kImageMedia.invalid("image is not a PNG, JPEG or WebP file");
    }
    detail::Decoded d;
    switch (*format) {
      case ImageFormat::png:
        d = detail::decode_png(bytes, limits);
        break;
      case ImageFormat::jpeg:
        d = detail::decode_jpeg(bytes, limits);
        break;
      case ImageFormat::webp:
        d = detail::decode_webp(bytes, limits);
        break;
    }
    return apply_exif_orientation(std::move(d.image), d.orientation);
  } catch (const Error& e) {
    if (param.empty() || !e.param().empty()) throw;
    throw Error(e.kind(), e.code(), e.what(), param);
  }
}

RgbImage decode_data_uri(std::string_view uri, const DecodeLimits& limits,
                         const std::string& param) {
  const DataUri data = parse_data_uri(uri, limits, param);
  return decode_image(data.bytes, limits, param);
}

}  // namespace clef::media
