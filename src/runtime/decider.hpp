#pragma once
// The decision interface the CLI and the server drive: one SystemOne request in, one response out.

#include <chrono>
#include <functional>
#include <string>

#include "json/value.hpp"

namespace clef::runtime {

/// Wall-clock time spent in each stage of one decision, in milliseconds.
struct StageTimings {
  double tokenize_ms = 0;
  double vision_ms = 0;  ///< image decoding, resizing and the vision tower (part of total)
  double backbone_ms = 0;
  double head_ms = 0;
  double total_ms = 0;
};

/// The outcome of one decision.
struct Decision {
  json::Value response;  ///< {"model", "answers", "usage"} (contract section 6)
  std::string body;      ///< response serialized (key order kept), the bytes a client gets
  int input_tokens = 0;  ///< usage.input_tokens
  StageTimings timings;
  /// Only from decide_traced(): {"ids": [...], "questions": [{"id", "question_span",
  /// "option_spans"}]} for --verbose output; null otherwise.
  json::Value trace;
};

/// Something that decides SystemOne requests. Implementations are NOT required to be thread-safe:
/// callers serialize decide() (the server runs all decisions on its runtime thread).
class Decider {
 public:
  virtual ~Decider() = default;
  /// Decides `request` (a parsed SystemOne request body). Throws clef::Error for a request that
  /// cannot be decided (400/413 ...), with the field at fault.
  virtual Decision decide(const json::Value& request) = 0;
  /// decide() that stops early once `cancelled()` says true (the client has gone), throwing
  /// clef::Error with code "client_closed_request". `cancelled` may be called often and from
  /// inside the model's compute: keep it cheap and non-throwing. Default: ignores it.
  virtual Decision decide(const json::Value& request, const std::function<bool()>& cancelled) {
    (void)cancelled;
    return decide(request);
  }
  /// decide() plus Decision::trace (the record's ids and spans). Default: no trace.
  virtual Decision decide_traced(const json::Value& request) { return decide(request); }
  /// The served model's name (the default of the request's `model`).
  virtual const std::string& model_name() const = 0;
  /// The context size in tokens.
  virtual int context_size() const = 0;
};

}  // namespace clef::runtime
