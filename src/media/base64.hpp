#pragma once
// Strict base64 (RFC 4648 section 4, standard alphabet) for image data URIs.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace clef::media {

/// Number of bytes `text` decodes to if it is well-formed base64 (length multiple of 4, at most
/// two '=' at the end); used to apply a size limit before decoding. Returns 0 for malformed
/// lengths (decode_base64 then reports the error).
std::size_t base64_decoded_size(std::string_view text) noexcept;

/// Decodes `text` strictly: only A-Z a-z 0-9 + /, length a multiple of 4, '=' padding only as
/// the last one or two characters, no whitespace, and the unused bits of the last group zero.
/// Throws clef::Error (400, invalid_image) naming the first offending position.
std::vector<std::uint8_t> decode_base64(std::string_view text);

/// Standard base64 with '=' padding (the inverse of decode_base64).
std::string encode_base64(std::span<const std::uint8_t> bytes);

}  // namespace clef::media
