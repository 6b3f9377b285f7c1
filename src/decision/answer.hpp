#pragma once
// The answer builder (decision contract, section 6; reference systemone_answer / systemone).

#include <cstddef>
#include <span>

#include "decision/confidence.hpp"
#include "json/value.hpp"
#include "request/request.hpp"

namespace clef::decision {

/// Rounding of every probability, score and confidence: CPython round(x, 4).
inline constexpr int kDecimals = 4;

/// The answer to `q` given its option probabilities in MODEL option order (q.options order),
/// as doubles (each the float32 softmax output widened exactly):
///   noul   {"type": "noul", "noul": round(p_true)}
///   choice {"type": "choice", "choice": id, "confidence": round(p_id), "probabilities": {...}}
///          probabilities in the request's criteria order; the choice is the FIRST option in that
///          order with the largest (unrounded) probability.
///   score  {"type": "score", "score": round(sum_i i * p_i), "confidence": round(max p),
///           "legend": {"0": criteria[0], ...}, "probabilities": {"0": round(p_0), ...}}
///          the sum runs in double in level order, starting from 0.
/// `confidence` other than reference replaces the confidence by confidence_of(p, kind)
/// (rounded the same way). Throws clef::Error (internal) when probs.size() != q.options.size().
json::Value answer_question(const request::Question& q, std::span<const double> probs,
                            ConfidenceKind confidence = ConfidenceKind::reference);

}  // namespace clef::decision
