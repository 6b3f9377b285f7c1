#pragma once
// The model side of the engine: what is served (ServedModel) and the preparation of a request.
// Const once loaded, shared by the HTTP threads while the loop thread runs the Runner; it needs
// the backbone's llama_model, never its context (llama_model beside llama_context).

#include <cstdint>
#include <string>

#include "json/value.hpp"
#include "runtime/loop/cancellation.hpp"
#include "runtime/loop/prepared_request.hpp"
#include "util/memory_budget.hpp"

namespace clef::runtime {

/// What a model accepts beyond the contract's own rules: a server tells clients (/v1/models).
struct ServedLimits {
  int context_size = 0;                 ///< tokens of one record
  int max_questions = 0;                ///< questions per request
  int max_options = 0;                  ///< options or score levels per question
  int max_images = 0;                   ///< images per request
  int max_image_tokens = 0;             ///< image tokens of one image (0: only the context)
  int max_request_image_tokens = 0;     ///< image tokens of all images together (0: the context)
  std::uint64_t max_vision_memory = 0;  ///< vision-tower compute bytes for one image (0: none)
  bool media_urls = false;  ///< http(s) image and video URLs are fetched (--allow-media-urls;
                            ///< "image_urls" on the wire)
  int max_videos = 0;       ///< videos per request (0: none accepted)
  /// Video files are decoded (FFmpeg's module is there: video::decoding_status); without it
  /// only frame lists are taken.
  bool video_files = false;
  int max_video_frames = 0;                 ///< frames the processor may keep of one video
  double max_video_seconds = 0;             ///< longest video, seconds
  std::int64_t max_video_frame_pixels = 0;  ///< largest video frame, width x height
  std::int64_t max_video_bytes = 0;         ///< largest video file, bytes
  int parallel = 1;  ///< decisions prefilled together (continuous batching), Runner::parallel()
  /// What one of those holds at most: backbone memory of a whole context (0: not said).
  std::uint64_t sequence_bytes = 0;
};

/// How the answers are built beyond the reference (opt-in; /v1/models says).
struct AnswerSettings {
  std::string calibration;               ///< the calibration file applied, empty: none
  std::string confidence = "reference";  ///< what `confidence` means
};

/// Which joint schema head is served (artifact::HeadIdentity): a published head, or one of the
/// user's own (`clef tune`'s, with what it was tuned from).
struct ServedHead {
  std::string sha256;       ///< of joint_head.safetensors; "" for a head inside the model GGUF
  std::string published;    ///< the published model whose head it is ("clef-flash"), or ""
  std::string tuned_from;   ///< `clef tune`'s record of the head it started from, or ""
  std::string description;  ///< HeadIdentity::describe(), or "inside the model GGUF"
};

/// The served model as logs, /v1/models and the metrics tell it; made once at load.
struct ServedModel {
  std::string name;        ///< the served id, the default of the request's `model`
  int context_size = 0;    ///< tokens of one record (limits.context_size)
  ServedLimits limits;     ///< what preparation enforces
  AnswerSettings answers;  ///< calibration and confidence in use
  ServedHead head;         ///< which joint schema head answers
  /// Where the model runs: the device, and on a GPU what went there ("CUDA0 (NVIDIA H200, ...):
  /// backbone 32/32 layers, vision tower, joint schema head on CUDA0"), or "CPU, N threads, ISA
  /// and weights" (device::describe_cpu_path). Empty: not said.
  std::string placement;
  /// What the decisions in progress may hold and the memory plan, for the startup log: "parallel
  /// 4 x context 16384: 565 MiB per sequence (...); plan: ...". Empty: not said.
  std::string sequence_memory;
  double load_seconds = 0;  ///< load (and, in a server, the warm-up decision), wall time
};

/// A loaded model as preparation sees it.
class Preparer {
 public:
  virtual ~Preparer() = default;

  /// Validates and prepares a parsed request body (see PreparedRequest) that `cancellation` may
  /// stop while it is prepared (a client that hangs up while its video is decoded:
  /// DecisionCancelled); the prepared request carries it. Thread-safe (const): the server calls
  /// it on its HTTP threads while the loop thread decides. Throws clef::Error for a request that
  /// cannot be decided (400/413/415/422), naming the field at fault. `body` is taken by value
  /// (std::move one no longer needed: its state moves into the prepared request, not copied);
  /// `charge` (when set) is charged with the memory preparation takes (the rendered state, each
  /// tokenized piece) and throws to refuse a request over a budget (util/memory_budget.hpp).
  virtual PreparedRequest prepare(json::Value body, const Cancellation& cancellation = {},
                                  const util::MemoryCharge& charge = {}) const = 0;

  /// What is served.
  virtual const ServedModel& served() const = 0;
};

}  // namespace clef::runtime
