#pragma once
// Owners of ggml's C contexts: gguf_context (gguf_free) and ggml_context (ggml_free).

#include <memory>

#include "ggml.h"
#include "gguf.h"

namespace clef::gguf {

struct GgufContextFree {
  void operator()(gguf_context* c) const noexcept { gguf_free(c); }
};
struct GgmlContextFree {
  void operator()(ggml_context* c) const noexcept { ggml_free(c); }
};

/// An owned gguf_context (from gguf_init_empty or gguf_init_from_file).
using GgufContextPtr = std::unique_ptr<gguf_context, GgufContextFree>;
/// An owned ggml_context (from ggml_init).
using GgmlContextPtr = std::unique_ptr<ggml_context, GgmlContextFree>;

}  // namespace clef::gguf
