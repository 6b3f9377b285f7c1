// The memory plan of an engine's files: measures them (runtime/engine/memory_plan.hpp holds the
// arithmetic) and fits --gpu-layers auto.
#include "runtime/engine/engine_memory.hpp"

#include <map>

#include "artifact/backbone_loader.hpp"
#include "artifact/open_model.hpp"
#include "backbone/backbone.hpp"
#include "backbone/memory_measure.hpp"
#include "device/device.hpp"
#include "gguf/gguf_file.hpp"
#include "util/error.hpp"
#include "util/physical_memory.hpp"

namespace clef::runtime {
namespace {

/// The backbone's part with `gpu_layers` on the GPU: a no_alloc load of its file (llama.cpp's
/// accounting, reading only the metadata) and a context sized on it.
backbone::BackboneMemory measure_backbone(const EngineConfig& config,
                                          const artifact::OpenedModel& opened, int gpu_layers) {
  backbone::BackboneParams params = config.backbone;
  params.gpu_layers = gpu_layers;
  params.on_progress = nullptr;
  llama_model_params mp = backbone::BackboneWeights::model_params(params, {});
  mp.no_alloc = true;
  mp.load_mode = LLAMA_LOAD_MODE_NONE;
  const artifact::OwnedLlamaModel model = artifact::load_backbone(opened.backbone, mp);
  return backbone::measure_memory(model.get(), params);
}

/// Everything but the backbone: the same whatever the layers on the GPU.
MemoryNeeds measure_the_rest(const EngineConfig& config, const artifact::OpenedModel& opened,
                             bool on_gpu) {
  MemoryNeeds needs;
  for (const auto& [name, tensor] : opened.head.tensors()) {
    needs.head += tensor.values.size() * sizeof(float);
  }
  if (!config.mmproj_path.empty()) {
    try {
      // Every tensor's data within the file: the tower reads its weights only at the first
      // image, so a truncated download is refused here, at start.
      for (const gguf::TensorRef& t : gguf::GgufFile(config.mmproj_path).tensors()) {
        needs.tower += t.bytes;
      }
    } catch (const Error& e) {
      throw model_error(std::string("cannot load the vision tower: ") + e.what());
    }
  }
  needs.hidden_rows = static_cast<std::uint64_t>(config.backbone.parallel) *
                      static_cast<std::uint64_t>(config.backbone.context_size) *
                      static_cast<std::uint64_t>(opened.n_embd) * sizeof(float);
  needs.head_and_tower_on_device = on_gpu;
  return needs;
}

}  // namespace

MemoryNeeds measure_engine_memory(const EngineConfig& config, const artifact::OpenedModel& opened,
                                  bool on_gpu, int gpu_layers) {
  MemoryNeeds needs = measure_the_rest(config, opened, on_gpu);
  needs.backbone = measure_backbone(config, opened, gpu_layers);
  return needs;
}

MemoryPlan plan_engine_memory(const EngineConfig& config, const artifact::OpenedModel& opened) {
  backbone::validate(config.backbone);  // ranges first: llama.cpp's own errors are less clear
  const device::Placement placement =
      device::resolve(config.backbone.device, config.backbone.gpu_layers);
  bool on_gpu = placement.gpu != nullptr;
  MemoryBudget budget;
  budget.physical = util::physical_memory_bytes();
  budget.host = util::available_host_memory();
  // --memory-limit is what the user plans on, more or less than MemAvailable (which leaves out
  // memory the kernel may not give back, and knows nothing of what else will start).
  if (config.memory_limit > 0) budget.host = {config.memory_limit, "(--memory-limit)"};
  int layers = on_gpu ? placement.gpu_layers : 0;
  bool fitted = false;
  // Each layer count is measured once (the fit's probes, then the plan of the one it chose); the
  // head, tower and hidden rows once.
  std::map<int, backbone::BackboneMemory> measured;
  const auto backbone_at = [&](int l) -> const backbone::BackboneMemory& {
    auto it = measured.find(l);
    if (it == measured.end()) it = measured.emplace(l, measure_backbone(config, opened, l)).first;
    return it->second;
  };
  const MemoryNeeds on_device_rest =
      on_gpu ? measure_the_rest(config, opened, true) : MemoryNeeds{};
  if (on_gpu) {
    std::size_t free = 0, total = 0;
    ggml_backend_dev_memory(placement.gpu, &free, &total);
    if (config.gpu_memory_limit > 0 && config.gpu_memory_limit < free) {
      free = config.gpu_memory_limit;  // a GPU shared with another process
    }
    budget.device = placement.info.name;
    budget.device_free = free;
    if (config.backbone.gpu_layers == backbone::kAutoGpuLayers && free > 0) {
      const std::string arch =
          opened.backbone.rename_from.empty() ? "qwen35." : opened.backbone.rename_from;
      const int n_layer = static_cast<int>(
          gguf::GgufFile(opened.backbone.gguf).get_uint(arch + "block_count").value_or(0));
      fitted = true;
      layers = fit_gpu_layers(n_layer, free, [&](int l) {
        MemoryNeeds needs = on_device_rest;
        needs.backbone = backbone_at(l);
        return needs;
      });
      if (layers == 0) {
        // Not one layer fits: everything runs on the CPU (device::resolve places the tower and
        // the head with the backbone), and the plan is the CPU's.
        on_gpu = false;
        budget.device.clear();
        budget.device_free = 0;
      }
    }
  }
  MemoryRequest request;
  request.state_cache_mb = config.state_cache_mb;
  request.max_vision_memory = config.max_vision_memory;
  request.parallel = config.backbone.parallel;
  request.context_size = config.backbone.context_size;
  MemoryNeeds needs = on_gpu ? on_device_rest : measure_the_rest(config, opened, false);
  needs.backbone = backbone_at(layers);
  MemoryPlan plan = plan_memory(needs, budget, request);
  plan.gpu_layers = layers;
  plan.fitted = fitted;
  return plan;
}

}  // namespace clef::runtime
