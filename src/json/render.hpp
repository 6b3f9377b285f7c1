#pragma once
// Serialization of clef::json::Value exactly as CPython's json.dumps (decision contract,
// section 2: render(value)).

#include <string>
#include <string_view>

#include "json/value.hpp"

namespace clef::json {

/// CPython json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True), byte for
/// byte: object keys sorted by code point (UTF-8 byte order) at every depth, stable for equal
/// keys; strings escape only `"` `\` and U+0000..U+001F (as \n \r \t \b \f or lowercase
/// \u00xx), everything else (DEL, non-ASCII) is copied as is; integers print their digits; floats
/// print as float_repr(), with NaN/Infinity/-Infinity for non-finite values. Linear in the
/// output size apart from sorting keys. Never throws except std::bad_alloc.
std::string dumps(const Value& v);

/// The same serialization but keeping object key order (used for response bodies).
std::string dumps_unsorted(const Value& v);

/// The contract's render(): a string value is used as is (its UTF-8 contents, unquoted); any
/// other value is dumps(v).
std::string render(const Value& v);

/// Appends `s` as a JSON string literal (quotes included) with dumps()'s escapes.
void append_quoted(std::string& out, std::string_view s);

}  // namespace clef::json
