#pragma once
// The SystemOne response (decision contract, section 6; reference systemone).

#include <cstddef>
#include <string>
#include <vector>

#include "decision/calibration.hpp"
#include "decision/confidence.hpp"
#include "json/value.hpp"
#include "request/request.hpp"

namespace clef::decision {

/// What a server may change in the answers (opt-in; the defaults give the reference's bytes).
struct AnswerOptions {
  const Calibration* calibration = nullptr;  ///< applied to the logits before softmax
  ConfidenceKind confidence = ConfidenceKind::reference;
};

/// The SystemOne response {"model", "answers": {question id: answer, request order},
/// "usage": {"input_tokens", "output_tokens": 0}}. `logits[k]` are question k's option logits in
/// model order; each question gets (options.calibration's scaling, then) softmax_f32, then
/// answer_question. Throws clef::Error (internal) when the logits do not match the questions.
json::Value build_response(const request::Request& req,
                           const std::vector<std::vector<float>>& logits, std::size_t input_tokens,
                           const AnswerOptions& options = {});

/// The response's bytes: json::dumps_unsorted (key order kept, CPython repr for numbers).
std::string response_body(const json::Value& response);

}  // namespace clef::decision
