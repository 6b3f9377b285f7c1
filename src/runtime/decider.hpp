#pragma once
// The decision interface the CLI and the server drive: prepare a SystemOne request (any thread),
// then decide the prepared request (the one thread that owns the model).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "cache/state_cache.hpp"
#include "json/value.hpp"
#include "runtime/prepared_request.hpp"
#include "util/error.hpp"

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

/// The outcome of one decision.
struct Decision {
  json::Value response;  ///< {"model", "answers", "usage"} (contract section 6)
  std::string body;      ///< response serialized (key order kept), the bytes a client gets
  int input_tokens = 0;  ///< usage.input_tokens
  /// The joint schema head's option logits per question (the record's question order, options in
  /// model order: record::QuestionRecord::option_ids), before softmax.
  std::vector<std::vector<float>> logits;
  int cached_tokens = 0;  ///< tokens resumed from the state cache instead of prefilled
  /// State tokens cut from the state's end to fit (record::Record::state_tokens_cut); the body,
  /// the reference's bytes, does not say it.
  int truncated_tokens = 0;
  /// Request fields the contract does not know, ignored (request::Request::ignored_fields).
  std::vector<std::string> ignored_fields;
  int suspensions = 0;  ///< times it was suspended for shorter ones (Decider::suspend)
  StageTimings timings;
};

/// What a decider accepts beyond the contract's own rules: a server tells clients (/v1/models).
struct ServedLimits {
  int context_size = 0;                 ///< tokens of one record
  int max_questions = 0;                ///< questions per request
  int max_options = 0;                  ///< options or score levels per question
  int max_images = 0;                   ///< images per request
  int max_image_tokens = 0;             ///< image tokens of one image (0: only the context)
  int max_request_image_tokens = 0;     ///< image tokens of all images together (0: the context)
  std::uint64_t max_vision_memory = 0;  ///< vision-tower compute bytes for one image (0: none)
  bool image_urls = false;              ///< http(s) image and video URLs are fetched
  int max_videos = 0;                   ///< videos per request (0: none accepted)
  int max_video_frames = 0;             ///< frames the processor may keep of one video
  double max_video_seconds = 0;         ///< longest video, seconds
  std::int64_t max_video_frame_pixels = 0;  ///< largest video frame, width x height
  std::int64_t max_video_bytes = 0;         ///< largest video file, bytes
  int parallel = 1;  ///< decisions prefilled together (continuous batching), Decider::parallel()
  /// What one of those holds at most: backbone memory of a whole context (0: not said).
  std::uint64_t sequence_bytes = 0;
};

/// How a decider builds its answers beyond the reference (opt-in; /v1/models says).
struct AnswerSettings {
  std::string calibration;               ///< the calibration file applied, empty: none
  std::string confidence = "reference";  ///< what `confidence` means
};

/// A decision being made beside others (Decider::begin): its prefill advances in Decider::step,
/// Decider::finish gives its answer. Destroying it gives its place back.
class DecisionInProgress {
 public:
  virtual ~DecisionInProgress() = default;
  /// Nothing is left to prefill (done, or stopped because its client has gone): finish() it.
  virtual bool prefilled() const = 0;
  /// Tokens of its record still to prefill (0 once prefilled()): what a scheduler orders by.
  virtual int tokens_left() const = 0;
};

/// Something that decides SystemOne requests.
class Decider {
 public:
  virtual ~Decider() = default;

  /// Validates and prepares a parsed request body (see PreparedRequest). Thread-safe: the server
  /// calls it on its HTTP threads while decide() runs. Throws clef::Error for a request that
  /// cannot be decided (400/413/415 ...), naming the field at fault.
  virtual PreparedRequest prepare(const json::Value& body) const = 0;

  /// prepare(body) for a request that may be cancelled while it is prepared (a client that hangs
  /// up while its video is decoded: the engine then throws DecisionCancelled); the prepared
  /// request carries `cancellation`. Default: prepare(body), then the handle is attached.
  virtual PreparedRequest prepare(const json::Value& body, const Cancellation& cancellation) const {
    PreparedRequest prepared = prepare(body);
    prepared.cancellation = cancellation;
    return prepared;
  }

  /// Decides a prepared request alone through the one decision loop (decide_alone(),
  /// runtime/decision_loop.hpp: begin(), step() in whole layout batches until prefilled(),
  /// finish()). NOT thread-safe: callers serialize it with the other deciding calls (the server
  /// runs them all on its runtime thread). Throws clef::DecisionCancelled once
  /// prepared.cancellation says so, clef::Error for a request the model cannot take.
  Decision decide(const PreparedRequest& prepared);

  /// How many decisions this decider prefills together (backbone::BackboneParams::parallel):
  /// the scheduler's slots (runtime/scheduler.hpp).
  virtual int parallel() const { return 1; }

  /// Starts deciding `prepared` (which the caller keeps alive until the decision is destroyed)
  /// beside at most parallel() - 1 others, on the deciding thread like decide(): the state
  /// cache's lookup and the snapshot points; its images go through the vision tower in step(),
  /// one per step. Throws what decide() throws before its images; clef::Error (internal) when
  /// parallel() decisions are already in progress.
  virtual std::unique_ptr<DecisionInProgress> begin(const PreparedRequest& prepared) = 0;

  /// One step of every decision in `decisions` not prefilled() yet (none suspended): at most one
  /// vision-tower image among them, then their next prefill pieces of at most `most_tokens`
  /// tokens each (backbone::Backbone::step; backbone::kWholeBatches: whole layout batches),
  /// several records in one backbone call; each one's answer is the bytes it gets from decide()
  /// alone. A decision whose client has gone stops here without disturbing the others. Throws
  /// clef::Error (internal) when the backbone fails: every decision of the step is then lost.
  virtual void step(std::span<DecisionInProgress* const> decisions,
                    int most_tokens = backbone::kPausablePiece) = 0;

  /// The answer of a prefilled() decision (the joint schema head, the response, the state
  /// cache). Throws clef::DecisionCancelled when its client has gone, clef::Error as decide().
  virtual Decision finish(DecisionInProgress& decision) = 0;

  /// Takes a decision that is not prefilled() off its sequence (its backbone memory kept aside)
  /// so another may use it; resume() puts it back on a free one. Its answer bytes do not change.
  /// Throws clef::Error (internal) for a decision that is suspended already or prefilled.
  virtual void suspend(DecisionInProgress& decision) = 0;
  /// Puts a suspended decision back on a free sequence. Throws clef::Error (internal) when none
  /// is free or it is not suspended.
  virtual void resume(DecisionInProgress& decision) = 0;

  /// Called on the deciding thread when no request waits: a moment to give back memory a large
  /// request made the decider hold. Default: nothing.
  virtual void idle() {}

  /// prepare() then decide(): one request from start to end (the CLI, the warm-up).
  Decision decide(const json::Value& body) { return decide(prepare(body)); }

  /// The served model's name (the default of the request's `model`).
  virtual const std::string& model_name() const = 0;
  /// The context size in tokens.
  virtual int context_size() const = 0;
  /// Calibration and confidence in use (default: the reference's answers).
  virtual AnswerSettings answer_settings() const { return {}; }
  /// Where the model runs, for logs and /v1/models: the device, and on a GPU what went there
  /// ("CUDA0 (NVIDIA H200, ...): backbone 32/32 layers, vision tower, joint schema head on
  /// CUDA0"), or "CPU, N threads, ISA and weights" (device::describe_cpu_path). Empty: not said.
  virtual std::string placement() const { return {}; }
  /// What the decisions in progress may hold, for the startup log: "parallel 4 x context 16384:
  /// 565 MiB per sequence (...)". Empty: not said.
  virtual std::string sequence_memory() const { return {}; }
  /// The state cache's counters (default: a cache that is off). Thread-safe.
  virtual cache::StateCacheStats state_cache_stats() const { return {}; }
  /// The limits it enforces while preparing (default: only the context size).
  virtual ServedLimits limits() const {
    ServedLimits l;
    l.context_size = context_size();
    return l;
  }
};

}  // namespace clef::runtime
