#pragma once
// The running side of the engine: decisions on the backbone's sequences, begun, stepped,
// suspended, resumed and finished by the one decision loop on the thread that owns the runner
// (the engine: backbone, tower, head, state cache, slots). What comes out is a Decision.

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/state_cache.hpp"
#include "json/value.hpp"
#include "runtime/loop/prepared_request.hpp"
#include "runtime/loop/scheduler.hpp"

namespace clef::runtime {

/// Wall-clock time spent in each stage of one decision, in milliseconds.
struct StageTimings {
  double tokenize_ms = 0;  ///< preparing: parse, validate, encode (PreparedRequest::tokenize_ms)
  double vision_ms = 0;    ///< image loading, decoding and resizing plus the vision tower
  double backbone_ms = 0;
  double head_ms = 0;
  double total_ms = 0;  ///< preparing + deciding (not the time spent waiting between the two)
  /// Time it was suspended while other decisions ran (not in backbone_ms or total_ms).
  double paused_ms = 0;
};

/// What the joint schema head read for one decision (runtime/engine/head_inputs.hpp).
struct HeadRows;

/// The outcome of one decision. What its preparation found (the state tokens cut to fit, the
/// fields the contract ignores) stays with its PreparedRequest (record.state_tokens_cut,
/// request.ignored_fields): carried once.
struct Decision {
  json::Value response;  ///< {"model", "answers", "usage"} (contract section 6)
  std::string body;      ///< response serialized (key order kept), the bytes a client gets
  int input_tokens = 0;  ///< usage.input_tokens
  /// The joint schema head's option logits per question (the record's question order, options in
  /// model order: record::QuestionRecord::option_ids), before softmax.
  std::vector<std::vector<float>> logits;
  int cached_tokens = 0;  ///< tokens resumed from the state cache instead of prefilled
  int suspensions = 0;    ///< times it was suspended for shorter ones (Runner::suspend)
  /// The head's inputs, when the request asked for them (PreparedRequest::keep_head_rows).
  std::shared_ptr<const HeadRows> head_rows;
  StageTimings timings;
};

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
  /// Its prefill has started (Runner::step's `start`); false while its images are encoded, and
  /// after a failure before its prefill.
  virtual bool prefilling() const = 0;
  /// When Runner::suspend took it off its sequence; nullopt while it holds one. The one record
  /// of a decision's suspension: the loop and the scheduler read it, the time it was suspended
  /// is counted once (Decision::timings.paused_ms).
  virtual std::optional<std::chrono::steady_clock::time_point> suspended_at() const = 0;
  bool suspended() const { return suspended_at().has_value(); }
};

/// Runs prepared requests. NOT thread-safe: every call on the one thread that owns it (which
/// publishes what others need to know, e.g. runtime::DecisionQueue's state-cache counters).
class Runner {
 public:
  virtual ~Runner() = default;

  /// How many decisions it prefills together (backbone::BackboneParams::parallel): the
  /// scheduler's slots (runtime/loop/scheduler.hpp).
  virtual int parallel() const { return 1; }

  /// What its steps are planned within (StepShape: slots = parallel(), the backbone's chunk and
  /// whether only whole layout batches may be decoded); `open` is the loop's to say.
  virtual StepShape step_shape() const {
    StepShape shape;
    shape.slots = parallel();
    return shape;
  }

  /// Starts deciding `prepared` (which the caller keeps alive until the decision is destroyed)
  /// beside at most parallel() - 1 others: the state cache's lookup and the snapshot points; its
  /// images go through the vision tower in step(), one per step. Throws clef::Error for a request
  /// the model cannot take, or internal when parallel() decisions are already in progress.
  virtual std::unique_ptr<DecisionInProgress> begin(const PreparedRequest& prepared) = 0;

  /// One step of the loop's plan (runtime::StepPlan) as the runner carries it out.
  struct StepOrders {
    /// The decisions that advance (none suspended, none prefilled).
    std::span<DecisionInProgress* const> advance;
    /// Of `advance`: the one whose next image the vision tower encodes first (null: none; an
    /// encode cannot be interrupted).
    DecisionInProgress* encode = nullptr;
    /// Of `advance`: those whose prefill starts, after the encode (their images all encoded).
    std::span<DecisionInProgress* const> start;
    /// The most tokens each prefill decodes (backbone::Backbone::step's piece_tokens).
    int most_tokens = 0;
  };

  /// Carries out `orders`: the encode, the prefills that start, then every prefill of `advance`
  /// decodes at most `most_tokens` tokens, several records in one backbone call; each one's
  /// answer is the bytes it gets alone. A decision whose client has gone stops here without
  /// disturbing the others; one whose encode or start fails keeps that for finish(). Decides
  /// nothing of its own. Throws clef::Error (internal) when the backbone fails (every decision of
  /// the step is then lost), or for orders that do not fit the decisions (a start before its
  /// images, a suspended one).
  virtual void step(const StepOrders& orders) = 0;

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

  /// The state cache's counters (default: a cache that is off).
  virtual cache::StateCacheStats state_cache_stats() const { return {}; }
};

}  // namespace clef::runtime
