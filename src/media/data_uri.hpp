#pragma once
// Image data URIs as requests carry them: data:image/png|jpeg|webp;base64,<payload>.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "media/errors.hpp"
#include "media/limits.hpp"

namespace clef::media {

/// A decoded data URI: its media type (lower case, e.g. "image/png") and payload bytes.
struct DataUri {
  std::string media_type;
  std::vector<std::uint8_t> bytes;
};

/// Splits `uri` = "data:<media type>;base64,<payload>" of any media type and decodes its payload:
/// 400 (kind.invalid_code, worded about kind.noun, with `example` as the accepted form) for a URI
/// that is not of this form or whose payload is not strict base64; 413 (kind.too_large_code) for
/// a payload over `max_bytes`, refused before decoding. The media type comes back lower case,
/// unchecked (parameters included). Errors name `param`.
DataUri split_data_uri(std::string_view uri, const MediaKind& kind, std::size_t max_bytes,
                       const std::string& param, std::string_view example);

/// Parses `uri` = "data:<media type>;base64,<payload>". The media type (case-insensitive) must
/// be image/png, image/jpeg or image/webp, else clef::Error 415; a URI that is not of this form
/// or whose payload is not strict base64 is a 400; a payload that decodes to more than
/// `limits.max_encoded_bytes` is a 413, refused before decoding. `param` names the request field
/// (e.g. "images.0") in every error.
DataUri parse_data_uri(std::string_view uri, const DecodeLimits& limits = {},
                       const std::string& param = {});

}  // namespace clef::media
