#pragma once
// Checks on a request's headers, made before its body is read.

#include <cstdint>
#include <optional>
#include <string_view>

namespace clef::server {

/// True for a JSON media type: "application/json" or any "application/<x>+json", case-
/// insensitive, parameters (";charset=utf-8") ignored. An absent header (empty) is accepted.
bool is_json_content_type(std::string_view content_type) noexcept;

/// The Content-Length header's value; nullopt when it is absent or not a plain decimal number
/// (httplib then reads what arrives or refuses the request itself).
std::optional<std::uint64_t> parse_content_length(std::string_view value) noexcept;

}  // namespace clef::server
