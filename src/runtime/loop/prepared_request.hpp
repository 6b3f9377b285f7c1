#pragma once
// A prepared request: the unit the decision queue (and later the batch scheduler) holds. Preparing
// does everything that needs no model lock - parse and validate the body, apply the defaults
// once, encode the record (ids and spans), decode, orient and resize the images and check every
// token budget - so a bad request is refused before it queues, and the thread that owns the model
// only runs the vision tower, the backbone and the joint schema head.

#include <chrono>
#include <vector>

#include "backbone/prefill_layout.hpp"
#include "json/value.hpp"
#include "record/record.hpp"
#include "request/request.hpp"
#include "runtime/loop/cancellation.hpp"
#include "runtime/loop/request_image.hpp"

namespace clef::runtime {

struct PreparedRequest {
  using Clock = std::chrono::steady_clock;

  request::Request request;  ///< validated; `model` defaulted to the served model's name
  record::Record record;     ///< ids, question/option spans, image blocks (contract 2-4)
  /// One per record.images block, same order: grid and the processor-sized RGB pixels.
  std::vector<RequestImage> images;
  /// M-RoPE position of every token (contract 4); empty for a text-only record (plain 0..T-1).
  std::vector<backbone::RopePosition> positions;
  /// Stops the decision early (the server wires it to the client's connection).
  Cancellation cancellation;
  double tokenize_ms = 0;       ///< parse, validate and encode, wall time
  double image_prepare_ms = 0;  ///< image loading, decoding and resizing, wall time
  Clock::time_point prepared_at = Clock::now();  ///< when preparing finished
  /// The decision also returns what the head read (Decision::head_rows): `clef tune`.
  bool keep_head_rows = false;

  /// usage.input_tokens: the record's length.
  int input_tokens() const { return static_cast<int>(record.input_tokens()); }
};

/// The record's ids, spans and image blocks as JSON, for `clef ask --verbose`:
/// {"ids": [...], "questions": [{"id", "question_span", "options": [{"option_id", "span"}]}],
///  "images": [{"first_token", "n_tokens", "input_size", "resized_size", "merged_grid"
///  [, "video": i for a video's temporal patch]}]}.
json::Value record_trace(const PreparedRequest& prepared);

}  // namespace clef::runtime
