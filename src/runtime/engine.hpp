#pragma once
// The decision engine: request -> record -> backbone hidden states -> joint schema head -> answers,
// as its two sides: the const Model that prepares requests (any thread) and the Runner the one
// decision loop drives (one thread).

#include <memory>

#include "json/value.hpp"
#include "runtime/engine_config.hpp"
#include "runtime/model.hpp"
#include "runtime/runner.hpp"

namespace clef::runtime {

/// A loaded model's two sides. `model` may outlive `runner` (an HTTP thread still preparing).
struct Engine {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Runner> runner;

  /// model->prepare(body, cancellation).
  PreparedRequest prepare(json::Value body, const Cancellation& cancellation = {}) const {
    return model->prepare(std::move(body), cancellation);
  }
  /// Decides `prepared` alone through the one decision loop (runtime::decide_alone): what clef
  /// ask, verify, calibrate and a local clef batch run. Throws what decide_alone throws.
  Decision decide(const PreparedRequest& prepared);
  /// prepare(body) then decide(): one request from start to end (the CLI, the warm-up).
  Decision decide(const json::Value& body) { return decide(prepare(body)); }
  const ServedModel& served() const { return model->served(); }
};

/// Loads the model files of `config`. Throws clef::Error (model_error) when a file is missing or
/// unusable, naming the file and the reason; invalid_request with the memory plan's arithmetic
/// when the model does not fit.
Engine make_engine(const EngineConfig& config);

}  // namespace clef::runtime
