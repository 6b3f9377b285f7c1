#pragma once
// The memory plan of an engine's model files (EngineConfig): what they take, measured before the
// weights load, set against this machine (runtime::plan_memory), with --gpu-layers auto fitted.

#include "runtime/engine/engine_config.hpp"
#include "runtime/engine/memory_plan.hpp"

namespace clef::artifact {
struct OpenedModel;
}

namespace clef::runtime {

/// What `config`'s files need with `gpu_layers` on the GPU (`on_gpu`): the backbone from a
/// no_alloc load of its file (llama.cpp's accounting, reading only the metadata), the head's f32
/// weights, the mmproj's weights, the hidden rows of params.parallel full contexts. Throws
/// clef::Error (model_error) when llama.cpp cannot load the metadata or size a context.
MemoryNeeds measure_engine_memory(const EngineConfig& config, const artifact::OpenedModel& opened,
                                  bool on_gpu, int gpu_layers);

/// The memory plan of `config`: the budget (util::available_host_memory, or memory_limit when
/// lower; the GPU's free memory, or gpu_memory_limit when lower), gpu_layers auto fitted to the
/// GPU by bisection over measure_engine_memory, then plan_memory. Throws as plan_memory does.
MemoryPlan plan_engine_memory(const EngineConfig& config, const artifact::OpenedModel& opened);

}  // namespace clef::runtime
