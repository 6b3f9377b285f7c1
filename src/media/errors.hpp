#pragma once
// Helpers that build the clef::Error for each kind of image refusal, so every decoder words
// and classifies them the same way.

#include <string>
#include <string_view>

#include "util/error.hpp"

namespace clef::media {

/// What a request's media item is, for the helpers that images and videos share (data URIs,
/// URL fetching): the noun their refusals use, their error codes and the HTTP Accept header.
struct MediaKind {
  std::string_view noun;              ///< "image", "video"
  std::string_view invalid_code;      ///< 400
  std::string_view too_large_code;    ///< 413
  std::string_view unsupported_code;  ///< 415
  std::string_view accept;            ///< Accept header of a URL fetch
};

inline constexpr MediaKind kImageMedia{"image", "invalid_image", "image_too_large",
                                       "unsupported_image", "image/png, image/jpeg, image/webp"};

/// 400: the bytes are not a valid image of the format they claim (corrupt, truncated, bad base64).
inline Error bad_image(std::string message, std::string param = {}) {
  return Error(ErrorKind::invalid_request, "invalid_image", std::move(message), std::move(param));
}

/// 413: the image is larger than a configured limit (encoded bytes or decoded pixels).
inline Error image_too_large(std::string message, std::string param = {}) {
  return Error(ErrorKind::payload_too_large, "image_too_large", std::move(message),
               std::move(param));
}

/// 415: a format or variant clef does not decode (GIF, CMYK JPEG, animated WebP, ...).
inline Error unsupported_image(std::string message, std::string param = {}) {
  return Error(ErrorKind::unsupported_media_type, "unsupported_image", std::move(message),
               std::move(param));
}

}  // namespace clef::media
