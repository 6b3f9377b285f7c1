#pragma once
// Strict UTF-8 validation (RFC 3629): what Python's bytes.decode("utf-8") accepts.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace clef::json {

/// Byte offset of the first byte that does not start a well-formed UTF-8 sequence in `s`
/// (overlong forms, encoded surrogates U+D800..U+DFFF, code points above U+10FFFF, truncated or
/// stray continuation bytes), or std::string_view::npos when all of `s` is valid.
std::size_t first_invalid_utf8(std::string_view s) noexcept;

/// Appends the UTF-8 encoding (1 to 4 bytes) of code point `cp` (<= U+10FFFF; the caller
/// rules out surrogates where they are not wanted) to `out`.
void append_utf8(std::string& out, std::uint32_t cp);

}  // namespace clef::json
