#pragma once
// Unicode NFC normalization (the reference tokenizer's normalizer; decision contract, section 7).

#include <string>
#include <string_view>

namespace clef::record {

/// NFC of UTF-8 text (utf8proc, UTF8PROC_STABLE | UTF8PROC_COMPOSE). ASCII text is returned as
/// is. Throws clef::Error 400 (invalid_request) for bytes that are not valid UTF-8.
std::string nfc(std::string_view utf8);

}  // namespace clef::record
