#pragma once
// The runner over a loaded model (runtime::Runner): it borrows the model's weights and holds what
// it computes with (the backbone's context, the vision tower, the joint schema head's compute
// buffers, the state cache), on the one thread the decision loop runs on. Several runners may
// borrow one model.

#include <memory>

#include "runtime/engine/engine_config.hpp"
#include "runtime/engine/loaded_model.hpp"
#include "runtime/loop/preparer.hpp"
#include "runtime/loop/runner.hpp"
#include "vision/tower.hpp"

namespace clef::runtime {

/// A runner and what preparation needs of it.
struct LoadedRunner {
  std::shared_ptr<const LoadedModel> model;  ///< what it borrows (shared)
  ServedModel served;                        ///< the model as this runner serves it
  /// The runner's vision tower (valid while `runner` lives), null without an mmproj.
  const vision::VisionTower* tower = nullptr;
  bool state_cache = false;  ///< the runner keeps a state cache (images get digests)
  std::unique_ptr<Runner> runner;
};

/// A runner over `model` (its weights borrowed, not loaded again): a backbone context of
/// model->config.backbone's parallel, context size and chunking, the joint schema head's compute
/// on model->head_gpu's backend (or the CPU's), the vision tower when the config names an mmproj
/// (opened now, its weights read at the first image). Throws clef::Error (model_error) for an
/// mmproj that cannot be used with the backbone, (invalid_request) when the sequences do not fit.
LoadedRunner load_runner(std::shared_ptr<const LoadedModel> model);

}  // namespace clef::runtime
