#pragma once
// The model files of one engine, loaded once: the backbone's and the joint schema head's weights,
// the lexical prior, the calibration, the memory plan and where each part runs. Const once loaded
// and shared: the runners made on it (runtime::load_runner) borrow it and hold only what they
// compute with (the backbone's context, the head's compute buffers, the vision tower), as
// llama.cpp's llama_contexts borrow one llama_model; preparation takes copies
// (runtime::EnginePreparer).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backbone/backbone_weights.hpp"
#include "decision/calibration.hpp"
#include "decision/response.hpp"
#include "device/device.hpp"
#include "head/head_model.hpp"
#include "lexical/lexical_table.hpp"
#include "runtime/engine/engine_config.hpp"
#include "runtime/engine/memory_plan.hpp"
#include "runtime/loop/preparer.hpp"

namespace clef::artifact {
struct OpenedModel;
}

namespace clef::runtime {

struct LoadedModel {
  /// Loads the files of `config` (in whatever layout they are: artifact::open_model): the head's
  /// weights checked against the backbone, a tied or missing LM head refused before the backbone
  /// loads, then the memory plan (runtime::plan_memory, from a no_alloc load of the backbone),
  /// then the weights: the head's on the placement's GPU when that backend runs every op of its
  /// graph, else on the CPU. The mmproj is only named here (each runner opens its vision tower:
  /// clip keeps an encoder's weights and compute together). Throws clef::Error (invalid_request)
  /// with the plan's arithmetic when the model does not fit; otherwise throws clef::Error
  /// (model_error) naming the file at fault.
  static std::shared_ptr<const LoadedModel> load(const EngineConfig& config);

  /// Use load(). Does not move (the answer options point into the calibration).
  LoadedModel(const EngineConfig& config, artifact::OpenedModel opened);
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  /// `config` as loaded: gpu_layers resolved by the plan, the model's name filled in.
  EngineConfig config;
  /// The memory plan it was loaded on (gpu_layers resolved, state cache and vision memory
  /// sized); made before the weights load, so a model that cannot fit is refused first.
  MemoryPlan memory;
  device::Placement placement;  ///< where the backbone, the tower and the head run
  lexical::LexicalTable lexical;
  std::vector<llama_model_kv_override> overrides;
  std::shared_ptr<const backbone::BackboneWeights> backbone;
  // Set by the head's load (declared before it): the GPU holding the head's weights (null: the
  // CPU), and the head's backend, with why when it is not the placement's GPU.
  ggml_backend_dev_t head_gpu = nullptr;
  std::string head_device;
  /// The joint schema head's weights, in one buffer of head_gpu's (or the CPU's) buffer type.
  std::shared_ptr<const head::HeadModel> head;
  std::optional<decision::Calibration> calibration;  ///< --calibration, if given
  decision::AnswerOptions answer_options;            ///< points into calibration
  ServedHead head_identity;                          ///< which head (hashed once, at load)
};

}  // namespace clef::runtime
