#pragma once
// Checks on a request's headers, made before its body is read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clef::server {

/// True for a JSON media type: "application/json" or any "application/<x>+json", case-
/// insensitive, parameters (";charset=utf-8") ignored. An absent header (empty) is accepted.
bool is_json_content_type(std::string_view content_type) noexcept;

/// The Content-Length header's value; nullopt when it is absent or not a plain decimal number
/// (httplib then reads what arrives or refuses the request itself).
std::optional<std::uint64_t> parse_content_length(std::string_view value) noexcept;

/// The charset parameter of a Content-Type, lower-cased and unquoted ("" when absent):
/// "application/json; charset=\"UTF-8\"" -> "utf-8".
std::string content_type_charset(std::string_view content_type);

/// Why a request's framing headers are unusable, or "" when they are fine. `lengths`: every
/// Content-Length value; `transfer_encoding`: the Transfer-Encoding value ("" when absent).
/// Refused: a Content-Length that is not a plain decimal number below 2^63 (negative, signed,
/// 20+ digits), Content-Length values that differ, Content-Length together with
/// Transfer-Encoding (RFC 9112 section 6.3: a smuggling vector), a transfer coding other than
/// "chunked".
std::string framing_problem(const std::vector<std::string>& lengths,
                            std::string_view transfer_encoding);

}  // namespace clef::server
