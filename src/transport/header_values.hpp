#pragma once
// Reading HTTP header values the one way both the connection loop (which frames bodies before a
// worker takes the request) and the server's checks (which refuse bad framing) read them, so the
// two can never disagree on where a body ends.

#include <cstdint>
#include <optional>
#include <string_view>

namespace clef::transport {

/// a == b ignoring ASCII case (header names, tokens such as "chunked", auth schemes).
bool same_name(std::string_view a, std::string_view b) noexcept;

/// `s` without the spaces and tabs around it (RFC 9110's optional whitespace).
std::string_view trim_blanks(std::string_view s) noexcept;

/// A Content-Length value: a plain decimal number of at most 19 digits (it fits 64 bits) after
/// trim_blanks; nullopt for anything else (empty, signs, a list, more digits).
std::optional<std::uint64_t> parse_content_length(std::string_view value) noexcept;

}  // namespace clef::transport
