#pragma once
// The outcome of one decision: the response a client gets, the joint schema head's logits, and
// what it cost (stage timings, cached and truncated tokens).

#include <string>
#include <vector>

#include "json/value.hpp"

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
  int suspensions = 0;  ///< times it was suspended for shorter ones (Runner::suspend)
  StageTimings timings;
};

}  // namespace clef::runtime
