#pragma once
// The running side of the engine: the decisions on the backbone's sequences, begun, stepped,
// suspended, resumed and finished by the one decision loop (runtime/decision_loop.hpp) on the one
// thread that owns the runner. The engine implements it over the backbone, the vision tower, the
// joint schema head, the state cache and the sequence slots; preparation is the Model's
// (runtime/model.hpp).

#include <chrono>
#include <memory>
#include <optional>
#include <span>

#include "cache/state_cache.hpp"
#include "runtime/decision.hpp"
#include "runtime/prepared_request.hpp"

namespace clef::runtime {

/// A decision on a sequence (Runner::begin): its prefill advances in Runner::step,
/// Runner::finish gives its answer. Destroying it gives its sequence back.
class DecisionInProgress {
 public:
  virtual ~DecisionInProgress() = default;
  /// Nothing is left to prefill (done, or stopped because its client has gone): finish() it.
  virtual bool prefilled() const = 0;
  /// Tokens of its record still to prefill (0 once prefilled()): what a scheduler orders by.
  virtual int tokens_left() const = 0;
  /// Its images whose vision-tower rows are still to be made before its prefill starts (0 once
  /// it started, or once it failed): a step's plan names at most one of them to encode.
  virtual int images_left() const = 0;
  /// When Runner::suspend took it off its sequence; nullopt while it holds one. The one record
  /// of a decision's suspension: the loop and the scheduler read it, the time it was suspended
  /// is counted once (Decision::timings.paused_ms).
  virtual std::optional<std::chrono::steady_clock::time_point> suspended_at() const = 0;
  bool suspended() const { return suspended_at().has_value(); }
};

/// Runs prepared requests. NOT thread-safe (but state_cache_stats()): every call on the one
/// thread that owns it.
class Runner {
 public:
  virtual ~Runner() = default;

  /// How many decisions it prefills together (backbone::BackboneParams::parallel): the
  /// scheduler's slots (runtime/scheduler.hpp).
  virtual int parallel() const { return 1; }

  /// Starts deciding `prepared` (which the caller keeps alive until the decision is destroyed)
  /// beside at most parallel() - 1 others: the state cache's lookup and the snapshot points; its
  /// images go through the vision tower in step(), one per step. Throws clef::Error for a request
  /// the model cannot take, or internal when parallel() decisions are already in progress.
  virtual std::unique_ptr<DecisionInProgress> begin(const PreparedRequest& prepared) = 0;

  /// Carries out one step of the loop's plan (runtime::StepPlan): first the vision tower encodes
  /// the next image of `encode` (one of `decisions`, with images_left(); null: none, an encode
  /// cannot be interrupted), then every decision in `decisions` (none suspended, none prefilled)
  /// whose images are all encoded advances by at most `most_tokens` tokens
  /// (backbone::Backbone::step; backbone::kWholeBatches: whole layout batches), several records
  /// in one backbone call; each one's answer is the bytes it gets alone. A decision whose client
  /// has gone stops here without disturbing the others. Throws clef::Error (internal) when the
  /// backbone fails: every decision of the step is then lost.
  virtual void step(std::span<DecisionInProgress* const> decisions, int most_tokens,
                    DecisionInProgress* encode) = 0;

  /// The answer of a prefilled() decision (the joint schema head, the response, the state
  /// cache). Throws clef::DecisionCancelled when its client has gone, clef::Error for a request
  /// the model cannot take.
  virtual Decision finish(DecisionInProgress& decision) = 0;

  /// Takes a decision that is not prefilled() off its sequence (its backbone memory kept aside)
  /// so another may use it; resume() puts it back on a free one. Its answer bytes do not change.
  /// Throws clef::Error (internal) for a decision that is suspended already or prefilled.
  virtual void suspend(DecisionInProgress& decision) = 0;
  /// Puts a suspended decision back on a free sequence. Throws clef::Error (internal) when none
  /// is free or it is not suspended.
  virtual void resume(DecisionInProgress& decision) = 0;

  /// Called when no request waits: a moment to give back memory a large request made it hold.
  /// Default: nothing.
  virtual void idle() {}

  /// The state cache's counters (default: a cache that is off). Thread-safe.
  virtual cache::StateCacheStats state_cache_stats() const { return {}; }
};

}  // namespace clef::runtime
