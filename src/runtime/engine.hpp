#pragma once
// The decision engine: request -> record -> backbone hidden states -> joint schema head -> answers.

#include <memory>

#include "runtime/decider.hpp"
#include "runtime/engine_config.hpp"

namespace clef::runtime {

/// Loads the model files of `config` and returns a Decider over them. Throws clef::Error
/// (model_error) when a file is missing or unusable, naming the file and the reason.
std::unique_ptr<Decider> make_engine(const EngineConfig& config);

}  // namespace clef::runtime
