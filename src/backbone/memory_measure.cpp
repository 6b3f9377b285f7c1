#include "backbone/memory_measure.hpp"

// llama_get_memory_breakdown is declared only in the pinned tree's staging header (see
// backbone.cpp).
#include <llama-ext.h>

#include "backbone/backbone.hpp"
#include "backbone/llama_handles.hpp"
#include "util/error.hpp"

namespace clef::backbone {

BackboneMemory measure_memory(llama_model* model, const BackboneParams& params) {
  check_scheduler_metadata(params);
  check_kv_tensors(model, params, params.parallel);
  const LlamaContextPtr ctx(
      llama_init_from_model(model, Backbone::context_params(params, params.parallel)));
  if (!ctx) throw model_error("cannot size a llama context for the backbone (see the log above)");
  BackboneMemory out;
  for (const auto& [buft, bytes] : llama_get_memory_breakdown(ctx.get())) {
    // The CPU's repacked and AMX buffer types say they are not host buffers (the CPU reads them
    // with its own kernels only), but their memory is the host's.
    const ggml_backend_dev_t dev = ggml_backend_buft_get_device(buft);
    const bool host = ggml_backend_buft_is_host(buft) || dev == nullptr ||
                      ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
    PlaceMemory& place = host ? out.host : out.device;
    place.weights += bytes.model;
    place.sequences += bytes.context;
    place.compute += bytes.compute;
  }
  return out;
}

}  // namespace clef::backbone
