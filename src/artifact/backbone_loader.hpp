#pragma once
// Loads the backbone of any layout with the pinned libllama, which knows only `qwen35`:
//  - layout A: llama_model_load_from_file, as before (mmap);
//  - layouts B, C, D: llama_model_init_from_user (include/llama.h, with node-llama-cpp's patch
//    to llama-model-loader.cpp that lets it create tensors from user metadata) given a metadata
//    copy rewritten in memory: `clef.*` keys renamed `qwen35.*` (layout B), general.architecture
//    set to qwen35, the head's keys dropped, and only the backbone's tensor infos; each tensor's
//    data is then read (pread) from the same file straight into its backend buffer. Nothing is
//    converted on disk; llama.cpp would refuse these files directly (unknown arch `clef`, or
//    "wrong number of tensors" for the head's extra tensors).

#include <llama.h>

#include <memory>

#include "artifact/open_model.hpp"

namespace clef::artifact {

struct LlamaModelFree {
  void operator()(llama_model* m) const noexcept { llama_model_free(m); }
};
/// An owned llama_model (llama_model_free on destruction).
using OwnedLlamaModel = std::unique_ptr<llama_model, LlamaModelFree>;

/// Loads the backbone described by `source` with `params` (n_gpu_layers, kv_overrides such as
/// the pre-tokenizer override, progress callback, ... are honoured; for a rewritten layout the
/// load mode is llama.cpp's "none": buffers are allocated and filled by reading the file, and the
/// progress callback is not called). The backend must be initialised (llama_backend_init).
/// Throws clef::Error (model_error) when libllama refuses the model, or when a tensor libllama
/// asks for is missing from the file or has another type or shape than the file's.
OwnedLlamaModel load_backbone(const BackboneSource& source, const llama_model_params& params);

}  // namespace clef::artifact
