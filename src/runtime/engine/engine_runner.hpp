#pragma once
// The runner over loaded model files (runtime::Runner): the backbone, the vision tower, the joint
// schema head and the state cache, on the one thread the decision loop runs on.

#include <memory>

#include "runtime/engine/engine_config.hpp"
#include "runtime/engine/loaded_model.hpp"
#include "runtime/loop/runner.hpp"

namespace clef::runtime {

/// A runner and the model files it loaded.
struct LoadedRunner {
  /// The runner's loaded model, const: what preparation copies and shares (valid while `runner`
  /// lives).
  const LoadedModel* model = nullptr;
  bool state_cache = false;  ///< the runner keeps a state cache (images get digests)
  std::unique_ptr<Runner> runner;
};

/// Loads the model files of `config` (LoadedModel) into a runner. Throws what LoadedModel throws.
LoadedRunner load_runner(const EngineConfig& config);

}  // namespace clef::runtime
