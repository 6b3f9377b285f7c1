#pragma once
// A calibration of the answers to a user's traffic (`clef calibrate` fits it, `clef serve
// --calibration FILE` applies it; without one the answers are the reference's, byte for byte):
// per question type, or per question id where there was enough data, a temperature T on the
// option logits and, for noul, a bias b on the true-vs-false logit difference:
//   choice, score: p = softmax(logits / T)
//   noul:          p_true = sigmoid((l_true - l_false) / T + b)  (Platt scaling)
// (Guo et al. 2017, "On Calibration of Modern Neural Networks", temperature scaling; Platt 1999.)

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "json/value.hpp"
#include "request/request.hpp"

namespace clef::decision {

/// One fitted scaling.
struct Scaling {
  double temperature = 1.0;  ///< > 0; 1 = unchanged
  double bias = 0.0;         ///< noul only: added to the true-vs-false logit difference
  int examples = 0;          ///< questions it was fitted on
  bool operator==(const Scaling&) const = default;
};

/// Scalings per question type and per question id (an id's own wins over its type's).
struct Calibration {
  std::array<std::optional<Scaling>, 3> by_type;  ///< index: request::QuestionType
  std::map<std::string, Scaling> by_question;     ///< question id -> scaling

  /// The scaling that applies to a question of `type` with id `question_id`, or null when none
  /// does (its logits stay as they are).
  const Scaling* scaling_for(request::QuestionType type, const std::string& question_id) const;

  /// The logits `q`'s answer is built from: `logits` (model order) divided by the temperature,
  /// with the bias added to the first option ("true") for noul. Unchanged without a scaling.
  std::vector<float> apply(const request::Question& q, std::span<const float> logits) const;

  /// {"format": "clef-calibration/1", "types": {"noul": {"temperature", "bias", "examples"},
  /// ...}, "questions": {id: {...}}}.
  json::Value to_json() const;

  /// Reads to_json()'s format. Throws clef::Error (invalid_request, naming the field) for
  /// anything else: unknown format or type, a temperature that is not a positive finite number.
  static Calibration from_json(const json::Value& v);
};

/// Reads a calibration file. Throws clef::Error (invalid_request) naming the file and field.
Calibration load_calibration(const std::filesystem::path& file);

}  // namespace clef::decision
