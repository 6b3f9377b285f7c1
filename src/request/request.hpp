#pragma once
// The SystemOne request model (decision contract, section 1): what parse_request() produces and
// the record encoder and answer builder consume.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "json/value.hpp"

namespace clef::request {

/// Question type; the numeric value is the joint schema head's type index (contract 3 and 5).
enum class QuestionType { noul = 0, choice = 1, score = 2 };

/// "noul", "choice" or "score" (the spelling used in requests, records and answers).
const char* type_name(QuestionType type) noexcept;

/// One allowed option of a question.
struct Option {
  std::string id;  ///< "true"/"false" (noul), the criteria key (choice), "0", "1", ... (score)
  /// The option's description as given. A null description is left out of the rendered option
  /// object (contract 1 and 2); the score legend still lists it as null.
  json::Value description;
};

/// One question, with its options in MODEL order (the order of the head's logits).
struct Question {
  std::string id;
  QuestionType type = QuestionType::noul;
  /// The value rendered into the question span: the request's `instructions`, or the question id
  /// (as a string) when `instructions` is missing, null or "" (reference encode_record).
  json::Value instructions;
  /// Model order: noul `true, false`; choice ids sorted by code point; score "0", "1", ...
  std::vector<Option> options;
  /// Request order: criteria_order[k] is the index in `options` of the k-th criterion as written
  /// in the request (the order of a choice answer's `probabilities`). The identity for noul/score.
  std::vector<std::size_t> criteria_order;
};

/// The model name a request defaults to when nothing else names one.
inline constexpr const char* kDefaultModelName = "clef-flash";

/// One request video: a video file (data URI or http(s) URL), or frames the client sampled
/// itself ({"frames": [...], "fps": F}).
struct Video {
  std::string source;               ///< the file's data URI or URL; empty for a frame list
  std::vector<std::string> frames;  ///< a frame list's images (data URIs or URLs), in order
  std::optional<double> fps;        ///< a frame list's frame rate; unset: the reference's 24
  bool is_frame_list() const noexcept { return source.empty(); }
};

/// The request's `media_kwargs` (the reference passes them to its processor as
/// processor(..., **media_kwargs)), validated. Unset members keep the processors' defaults.
struct MediaKwargs {
  std::optional<double> fps;             ///< videos: frames sampled per second
  std::optional<int> num_frames;         ///< videos: exact frame count (excludes fps)
  std::optional<bool> do_sample_frames;  ///< videos: false keeps every frame
  std::optional<int> min_frames;         ///< videos: least frames when sampling by fps
  std::optional<int> max_frames;         ///< videos: most frames
  /// images: the image processor's min_pixels / max_pixels (the video processor takes no such
  /// argument, as in the reference).
  std::optional<std::int64_t> min_pixels;
  std::optional<std::int64_t> max_pixels;
  /// images and videos: size = {"shortest_edge": ..., "longest_edge": ...} (both keys).
  std::optional<std::int64_t> size_shortest_edge;
  std::optional<std::int64_t> size_longest_edge;
  bool empty() const noexcept {
    return !fps && !num_frames && !do_sample_frames && !min_frames && !max_frames && !min_pixels &&
           !max_pixels && !size_shortest_edge;
  }
};

/// A validated request. Images and videos are kept as given (data URI, URL or path); decoding
/// them is the vision and video modules' job.
struct Request {
  std::string model = kDefaultModelName;
  json::Value state;
  std::vector<Question> questions;  ///< request order
  std::vector<std::string> images;
  std::vector<Video> videos;
  MediaKwargs media_kwargs;
  /// The request's `max_length`: the most tokens its record may have (the reference encoder's
  /// max_length), bounded by the served context. Unset: the served context.
  std::optional<int> max_length;
  /// The request's `max_state_tokens`: the state's ids are cut to their first N before the record
  /// is fitted to max_length. Unset: no cut of its own.
  std::optional<int> max_state_tokens;
  /// Fields the request carries that the contract does not know, as dotted paths in the order
  /// met ("temperature", "questions.q.instruction"): accepted and left out of the decision, as
  /// the reference does; said back to the client (X-Clef-Ignored-Fields) and in the log.
  std::vector<std::string> ignored_fields;
};

/// What parse_request does with a field the contract does not know.
enum class UnknownFields {
  accept,  ///< the reference's behaviour: ignored (and listed in Request::ignored_fields)
  refuse,  ///< 400 invalid_request naming the field and the nearest known one
};

/// Size limits enforced by parse_request (each over-limit request gets a 413 naming the field).
struct RequestLimits {
  std::size_t max_questions = 64;       ///< questions per request
  std::size_t max_options = 255;        ///< options per question (choice criteria, score levels)
  std::size_t max_images = 4;           ///< entries of `images`
  std::size_t max_videos = 2;           ///< entries of `videos`
  std::size_t max_listed_frames = 768;  ///< images of one video's frame list
  UnknownFields unknown_fields = UnknownFields::accept;  ///< `--unknown-fields`
};

}  // namespace clef::request
