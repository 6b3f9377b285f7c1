#pragma once
// An engine over model files (runtime::Engine: the preparer and the runner over one loaded
// model).

#include "runtime/engine/engine_config.hpp"
#include "runtime/loop/engine.hpp"

namespace clef::runtime {

/// Loads the model files of `config`. Throws clef::Error (model_error) when a file is missing or
/// unusable, naming the file and the reason; invalid_request with the memory plan's arithmetic
/// when the model does not fit.
Engine make_engine(const EngineConfig& config);

}  // namespace clef::runtime
