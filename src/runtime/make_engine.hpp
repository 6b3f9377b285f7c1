#pragma once
// An engine over model files (runtime::Engine: the preparer and the runner over one loaded
// model).

#include <memory>

#include "runtime/engine/engine_config.hpp"
#include "runtime/loop/engine.hpp"

namespace clef::runtime {

struct LoadedModel;

/// Loads the model files of `config`. Throws clef::Error (model_error) when a file is missing or
/// unusable, naming the file and the reason; invalid_request with the memory plan's arithmetic
/// when the model does not fit.
Engine make_engine(const EngineConfig& config);

/// An engine over a model already loaded (its weights borrowed, not loaded again): a second
/// runner beside another engine's, with its own backbone context, vision tower and head
/// compute (runtime::load_runner). Throws what load_runner throws.
Engine make_engine(std::shared_ptr<const LoadedModel> model);

}  // namespace clef::runtime
