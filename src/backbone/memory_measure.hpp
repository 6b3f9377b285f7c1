#pragma once
// What a backbone will take, in llama.cpp's own accounting, before anything is allocated: the
// model loaded with no_alloc and a context made on it, as llama.cpp's memory fit does
// (common/fit.cpp, common_get_device_memory_data).

#include <llama.h>

#include <cstdint>

#include "backbone/backbone_params.hpp"

namespace clef::backbone {

/// Bytes in one place (host memory, or one GPU's).
struct PlaceMemory {
  std::uint64_t weights = 0;    ///< model buffers (repacked copies counted once, in their place)
  std::uint64_t sequences = 0;  ///< the context's KV cells and recurrent states
  std::uint64_t compute = 0;    ///< the scheduler's compute buffers for one chunk
  std::uint64_t total() const noexcept { return weights + sequences + compute; }
};

/// A backbone's memory: on the host (the CPU's and host-pinned buffers) and on the GPU.
struct BackboneMemory {
  PlaceMemory host;
  PlaceMemory device;
};

/// What `model` takes with a context of params.parallel sequences of `params`
/// (Backbone::context_params), from llama_get_memory_breakdown. `model` must have been loaded
/// with llama_model_params::no_alloc (its buffers are then sizes only, and so are the context's:
/// nothing is allocated or read). Throws clef::Error: invalid_request for a chunk_tokens whose
/// scheduler metadata would not fit (check_scheduler_metadata), model_error when llama.cpp
/// cannot make the context.
BackboneMemory measure_memory(llama_model* model, const BackboneParams& params);

}  // namespace clef::backbone
