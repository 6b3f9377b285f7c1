#pragma once
// Helpers that build the clef::Error for each kind of image refusal, so every decoder words
// and classifies them the same way.

#include <string>

#include "util/error.hpp"

namespace clef::vision {

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

}  // namespace clef::vision
