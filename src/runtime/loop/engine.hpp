#pragma once
// The decision engine as the loop sees it: request -> record -> backbone hidden states -> joint
// schema head -> answers, as its two sides: the const Preparer that prepares requests (any thread)
// and the Runner the one decision loop drives (one thread). runtime/make_engine.hpp makes
// one from model files.

#include <memory>

#include "json/value.hpp"
#include "runtime/loop/preparer.hpp"
#include "runtime/loop/runner.hpp"

namespace clef::runtime {

/// A loaded model's two sides. `preparer` may outlive `runner` (an HTTP thread still preparing).
struct Engine {
  std::shared_ptr<const Preparer> preparer;
  std::unique_ptr<Runner> runner;

  /// preparer->prepare(body, cancellation).
  PreparedRequest prepare(json::Value body, const Cancellation& cancellation = {}) const {
    return preparer->prepare(std::move(body), cancellation);
  }
  /// Decides `prepared` alone through the one decision loop (runtime::decide_alone): what clef
  /// ask, verify, calibrate and a local clef batch run. Throws what decide_alone throws.
  Decision decide(const PreparedRequest& prepared);
  /// prepare(body) then decide(): one request from start to end (the CLI, the warm-up).
  Decision decide(const json::Value& body) { return decide(prepare(body)); }
  const ServedModel& served() const { return preparer->served(); }
};

}  // namespace clef::runtime
