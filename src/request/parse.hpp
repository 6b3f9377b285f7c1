#pragma once
// Validation of a SystemOne request body (decision contract, section 1).

#include <string_view>

#include "json/value.hpp"
#include "request/request.hpp"

namespace clef::request {

/// Builds a Request from a parsed JSON body, with the reference's option order and defaults:
///   - `model`: a string (null refused, as the contract says); `default_model` (the served
///     model's name) when absent: the one place this default is applied.
///   - `state`: required (any JSON value, null included).
///   - `questions`: a non-empty object; each question an object with `type` noul|choice|score.
///     noul: options true, false with default descriptions, overridden by the keys "true"/"false"
///     of a `criteria` object (other keys ignored; null/absent/[]/"" criteria = no override).
///     choice: `criteria` a non-empty object, options sorted by id code point.
///     score: `criteria` a non-empty array, option ids "0", "1", ... (the reference would also
///     take an object; the engine refuses it).
///     `instructions` missing, null or "" -> the question id.
///   - `images`: optional array of strings (null = none).
///   - `videos`: optional array of video files (strings) or frame lists (parse_videos).
///   - `media_kwargs`: optional processor settings (parse_media_kwargs).
///   - `max_length`, `max_state_tokens`: optional integers >= 1 (null = absent): the record's
///     most tokens and the state's most tokens (Request).
/// Unknown fields (top level, in a question, in a noul criteria object) are ignored and listed in
/// Request::ignored_fields, or refused with `limits.unknown_fields == refuse` (400 naming the
/// field and the nearest known one: "questions.q.instruction: unknown field; did you mean
/// instructions?").
/// Throws clef::Error: invalid_request (400) naming the dotted field path (e.g.
/// "questions.urgency.criteria") for a missing or mistyped field; payload_too_large (413) naming
/// the field when a count exceeds `limits`.
/// The body is taken by value so that its state moves into the Request (std::move a body that is
/// no longer needed).
Request parse_request(json::Value body, const RequestLimits& limits = {},
                      std::string_view default_model = kDefaultModelName);

}  // namespace clef::request
