#pragma once
// clef::json::parse: JSON text -> Value exactly as CPython's json.loads (strict mode) would read
// it, or a clef::Error (decision contract, sections 1 and 2).

#include <cstddef>
#include <string_view>

#include "json/value.hpp"
#include "util/memory_budget.hpp"

namespace clef::json {

/// Limits on untrusted JSON text.
struct ParseLimits {
  std::size_t max_bytes = 16u << 20;  ///< longest accepted text, in bytes
  int max_depth = 128;                ///< most nested arrays/objects ("[[1]]" has depth 2)
  /// Charged with the memory of the values as they are made (about every MiB; each value's
  /// slot in its container, with room for the container's growth, and its text): it throws to
  /// stop a parse whose tree would pass a memory budget (util/memory_budget.hpp).
  util::MemoryCharge charge{};
};

/// Parses `text` as CPython's json.loads would (strict mode):
///   - surrounding JSON whitespace (space, \t, \n, \r) is fine; anything else after the value,
///     a UTF-8 byte order mark, comments, trailing commas, single quotes are errors;
///   - objects keep key order; a duplicated key keeps its first position with the last value;
///   - integers keep their exact digits ("-0" -> "0"); more than 4300 digits is refused, as
///     CPython 3.11's int limit does;
///   - a number with a fraction or exponent is a correctly rounded double ("1e400" -> inf,
///     "-0.0" -> -0.0); NaN, Infinity, -Infinity are accepted (not -NaN, Inf, nan);
///   - strings: escapes \" \\ \/ \b \f \n \r \t \uXXXX; surrogate pairs combine.
/// Throws clef::Error:
///   - ErrorKind::payload_too_large, code "request_too_large" (413) when text.size() >
///     limits.max_bytes;
///   - ErrorKind::invalid_request, code "invalid_json" (400), with the byte offset in the
///     message, for: invalid JSON, invalid UTF-8 anywhere, raw control characters (U+0000..U+001F)
///     inside strings, lone surrogate escapes such as "\ud800" (CPython accepts them, but they
///     are not Unicode text and cannot be tokenized), nesting deeper than limits.max_depth.
/// Linear time; no recursion (deep input cannot overflow the stack).
Value parse(std::string_view text, const ParseLimits& limits = {});

}  // namespace clef::json
