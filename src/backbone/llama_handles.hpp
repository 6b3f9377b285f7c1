#pragma once
// RAII owners for libllama handles.

#include <memory>

#include <llama.h>

namespace clef::backbone {

struct LlamaModelDeleter {
  void operator()(llama_model* m) const noexcept { llama_model_free(m); }
};
struct LlamaContextDeleter {
  void operator()(llama_context* c) const noexcept { llama_free(c); }
};
using LlamaModelPtr = std::unique_ptr<llama_model, LlamaModelDeleter>;
using LlamaContextPtr = std::unique_ptr<llama_context, LlamaContextDeleter>;

/// Initializes llama.cpp's backends once per process (idempotent, thread-safe) and routes its
/// log to stderr at warning level and above (everything when `verbose`).
void ensure_llama_backend(bool verbose = false);

}  // namespace clef::backbone
