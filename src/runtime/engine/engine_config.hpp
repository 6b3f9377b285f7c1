#pragma once
// Everything needed to build a decision engine from model files.

#include <cstdint>
#include <string>

#include "backbone/backbone_params.hpp"
#include "request/request.hpp"

namespace clef::runtime {

/// What to do with a record longer than the context.
enum class Truncation {
  truncate,  ///< the reference's behaviour: keep the start of the state, cut the rest
  refuse,    ///< 413 context_length_exceeded naming both token counts
};

/// Model files and engine parameters.
struct EngineConfig {
  std::string backbone_path;     ///< qwen35 backbone GGUF
  std::string head_path;         ///< joint_head.safetensors (layout A only; empty for B/C)
  std::string head_config_path;  ///< joint_head_config.json
  std::string mmproj_path;       ///< qwen3vl mmproj GGUF; empty: requests with images get a 400
  /// Served model id, the default `model`. Empty: named after the joint schema head: the id of
  /// the published model whose head config it has exactly ("clef" for Clef 27B's), else
  /// "clef-flash".
  std::string model_name;
  backbone::BackboneParams backbone;
  Truncation truncation = Truncation::truncate;
  /// A request field the contract does not know: accepted and listed (the reference ignores it;
  /// the SDKs send extra keys), or refused with 400 naming it (`--unknown-fields refuse`).
  request::UnknownFields unknown_fields = request::UnknownFields::accept;
  int max_questions = 64;  ///< questions per request
  int max_options = 255;   ///< options per question
  int max_images = 4;      ///< images per request
  int max_videos = 2;      ///< videos per request
  /// Longest video, seconds (from its header, or its packets when the header does not say).
  double max_video_seconds = 600;
  /// Most frames the processor may keep of one video (after sampling), and most images in a
  /// frame list.
  int max_video_frames = 768;
  /// Largest video frame, width * height pixels, from the header.
  std::int64_t max_video_frame_pixels = std::int64_t{3840} * 2160;
  /// Largest encoded video, bytes (after base64 decoding).
  std::int64_t max_video_bytes = std::int64_t{64} * 1024 * 1024;
  /// Longest wall time for opening, scanning and decoding one video, milliseconds.
  int video_decode_timeout_ms = 60'000;
  /// Image tokens one image may have (after the processor's resize), else 413 before decoding.
  /// 4,096 as llama.cpp caps qwen3vl images (a 2048x2048 image); 0: no cap beyond the context.
  int max_image_tokens = 4096;
  /// Image tokens all of a request's images may have together (0: no cap beyond the context).
  int max_request_image_tokens = 8192;
  /// Compute memory the vision tower may take for one image (vision::tower_compute_bytes), bytes;
  /// an image over it gets 413 before decoding. 0: what the memory plan leaves for it (at most a
  /// quarter of the machine's physical memory; runtime::plan_memory).
  std::uint64_t max_vision_memory = 0;
  /// MiB the state cache may hold (cache::StateCache): -1 what the memory plan leaves (at most
  /// 4,096; runtime::plan_memory); 0 off. Answers are the same bytes either way; a hit only saves
  /// the prefill.
  std::int64_t state_cache_mb = -1;
  /// Host memory the engine plans on, bytes (runtime::plan_memory), more or less than what the
  /// machine reports: 0 what this process may use at start (util::available_host_memory:
  /// MemAvailable, or the cgroup's limit).
  std::uint64_t memory_limit = 0;
  /// GPU memory the engine plans on, bytes: 0 what the GPU has free at start (a GPU shared with
  /// another process: less).
  std::uint64_t gpu_memory_limit = 0;
  /// With a state cache: a prefill snapshots its memory at the first layout batch boundary after
  /// every this many milliseconds (keeping only the latest), and a decision whose client went
  /// away keeps that snapshot in the cache, so the client's retry (an SDK attempt that timed out)
  /// resumes there instead of at token 0. 0: off. Answers are the same bytes either way.
  int resume_snapshot_ms = 2000;
  /// A calibration file (`clef calibrate`; decision::Calibration) applied to the logits before the
  /// answers are built. Empty: none, the answers are the reference's.
  std::string calibration_path;
  /// What `confidence` means in choice and score answers (decision::ConfidenceKind): "reference"
  /// (the default: the chosen option's probability), "entropy", "gini" or "max_over_uniform".
  std::string confidence = "reference";
  bool debug_log = false;  ///< llama.cpp's and the vision tower's own log at info level (--debug)
  /// Fetch `images` and `videos` given as http(s) URLs (server --allow-media-urls, formerly
  /// --allow-image-urls). Off: only data URIs.
  /// Fetching never reaches loopback, private, link-local, unique-local or unspecified addresses.
  bool allow_media_urls = false;
  /// TEST ONLY: image URLs may also reach loopback addresses (a test server on localhost). Never
  /// set it in a server: it lets a request reach services on the host.
  bool allow_loopback_media_urls_for_tests = false;
  int image_fetch_timeout_ms = 10'000;  ///< one image URL, all redirects included
  /// Normalize images with the mmproj's own image_mean / image_std even when they are not the
  /// reference's 0.5 / 0.5 (by default such a file is warned about and 0.5 / 0.5 are used).
  bool mmproj_file_normalization = false;

  /// Fills the paths from a model directory (artifact::find_model_paths): backbone.gguf, else
  /// model.gguf, else the one *.gguf not named mmproj*; mmproj*.gguf; joint_head.safetensors and
  /// joint_head_config.json when present (layout A; B and C carry the head inside the GGUF).
  /// Throws clef::Error (model_error) naming what is missing or ambiguous.
  static EngineConfig from_model_dir(const std::string& dir);
};

}  // namespace clef::runtime
