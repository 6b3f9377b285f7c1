#pragma once
// Copies GGUF key/value pairs between gguf contexts (a metadata rewrite, a tokenizer taken from a
// vocabulary-only GGUF).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gguf.h"

namespace clef::gguf {

/// Copies key `id` of `src` into `dst` under the name `new_key`: same type and value, arrays of
/// any element type (strings included). Throws clef::Error (model_error) for a nested array or
/// an unknown value type, naming the key.
void copy_kv(gguf_context* dst, const gguf_context* src, std::int64_t id,
             const std::string& new_key);

/// Copies every key of `src` whose name starts with `prefix` into `dst` under the same name (as
/// copy_kv). Returns the number of keys copied.
std::size_t copy_keys_with_prefix(gguf_context* dst, const gguf_context* src,
                                  std::string_view prefix);

}  // namespace clef::gguf
