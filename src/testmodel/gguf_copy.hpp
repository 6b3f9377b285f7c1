#pragma once
// Copies GGUF key/value pairs between gguf contexts (used to take the tokenizer from a
// vocabulary-only GGUF).

#include <cstddef>
#include <string_view>

#include "gguf.h"

namespace clef::testmodel {

/// Copies every key of `src` that starts with `prefix` into `dst` (same type, same value; arrays
/// of any element type, strings included). Returns the number of keys copied.
std::size_t copy_keys_with_prefix(gguf_context* dst, const gguf_context* src,
                                  std::string_view prefix);

}  // namespace clef::testmodel
