#pragma once
// The model files of one engine, loaded once, and what the server says of them: the backbone, the
// joint schema head, the lexical prior, the vision tower, the calibration, where each runs, and
// the model served (ServedModel). The engine's runner owns it and alone uses it (the backbone's
// context, the tower's compute buffers); preparation takes copies (runtime::EnginePreparer).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "decision/calibration.hpp"
#include "decision/response.hpp"
#include "device/device.hpp"
#include "head/joint_schema_head.hpp"
#include "lexical/lexical_table.hpp"
#include "runtime/engine/engine_config.hpp"
#include "runtime/engine/memory_plan.hpp"
#include "runtime/loop/preparer.hpp"
#include "vision/tower.hpp"

namespace clef::artifact {
struct OpenedModel;
}

namespace clef::runtime {

struct LoadedModel {
  /// Loads the files of `config` (in whatever layout they are: artifact::open_model): the head's
  /// weights checked against the backbone, a tied or missing LM head refused before the backbone
  /// loads, then the memory plan (runtime::plan_memory, from a no_alloc load of the backbone),
  /// then the weights. Throws clef::Error (invalid_request) with the plan's arithmetic when the
  /// model does not fit; otherwise throws clef::Error (model_error) naming the file at fault. Does
  /// not move (the answer options point into the calibration).
  explicit LoadedModel(const EngineConfig& config);
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  /// What is served: the name, the limits a request meets (/v1/models `limits`), the answer
  /// settings, where the model runs ("CPU, N threads, " and the CPU's matrix path
  /// (device::describe_cpu_path), or "DEVICE (...): backbone L/L layers, vision tower, joint
  /// schema head on DEVICE") and what each decision in progress may hold with the memory plan
  /// ("parallel N x context C: ...; plan: host: ...; left: ...").
  ServedModel served() const;

  EngineConfig config;
  /// The memory plan it was loaded on (gpu_layers resolved, state cache and vision memory
  /// sized); made before the weights load, so a model that cannot fit is refused first.
  MemoryPlan memory;
  device::Placement placement;  ///< where the backbone, the tower and the head run
  std::string head_device;      ///< the head's backend, and why when it is not placement's
  lexical::LexicalTable lexical;
  std::vector<llama_model_kv_override> overrides;
  backbone::Backbone backbone;
  head::JointSchemaHead head;
  std::unique_ptr<vision::VisionTower> tower;        ///< null without an mmproj
  std::optional<decision::Calibration> calibration;  ///< --calibration, if given
  decision::AnswerOptions answer_options;            ///< points into calibration
  ServedHead head_identity;                          ///< which head (hashed once, at load)

 private:
  // `opened` is taken by value: the f32 head weights are freed once uploaded to the head's
  // backend buffer.
  LoadedModel(const EngineConfig& config, artifact::OpenedModel opened);
};

}  // namespace clef::runtime
