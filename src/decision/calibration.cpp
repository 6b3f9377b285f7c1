#include "decision/calibration.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "json/parse.hpp"
#include "util/error.hpp"

namespace clef::decision {
namespace {

constexpr const char* kFormat = "clef-calibration/1";

json::Value scaling_json(const Scaling& s) {
  return json::Value::object({{"temperature", json::Value::floating(s.temperature)},
                              {"bias", json::Value::floating(s.bias)},
                              {"examples", json::Value::integer(std::int64_t{s.examples})}});
}

double number(const json::Value* v, const std::string& field) {
  if (v == nullptr) throw invalid_request("calibration: " + field + " is missing", field);
  double d = 0;
  if (v->is_float()) {
    d = v->as_double();
  } else if (v->is_integer()) {
    // strtod, not stod: an integer too large for a double is +-inf ("is not finite" below),
    // where stod threw an out_of_range nobody named (a reported input: 401 digits).
    d = std::strtod(v->integer_digits().c_str(), nullptr);
  } else {
    throw invalid_request("calibration: " + field + " is not a number", field);
  }
  if (!std::isfinite(d)) throw invalid_request("calibration: " + field + " is not finite", field);
  return d;
}

Scaling scaling_from(const json::Value& v, const std::string& field) {
  if (!v.is_object()) throw invalid_request("calibration: " + field + " is not an object", field);
  Scaling s;
  // Bounded so that scaled logits stay finite and the softmax well defined (a break test got NaN
  // answers from a temperature of 1e-300); clef calibrate fits within [0.05, 20].
  s.temperature = number(v.find("temperature"), field + ".temperature");
  if (!(s.temperature >= 0.01 && s.temperature <= 100)) {
    throw invalid_request("calibration: " + field + ".temperature must be in [0.01, 100]",
                          field + ".temperature");
  }
  if (const json::Value* b = v.find("bias"); b != nullptr) {
    s.bias = number(b, field + ".bias");
    if (!(s.bias >= -100 && s.bias <= 100)) {
      throw invalid_request("calibration: " + field + ".bias must be in [-100, 100]",
                            field + ".bias");
    }
  }
  if (const json::Value* n = v.find("examples"); n != nullptr && n->is_integer()) {
    const std::string& digits = n->integer_digits();
    s.examples = digits.size() <= 9 && digits[0] != '-' ? std::stoi(digits) : 0;
  }
  return s;
}

}  // namespace

const Scaling* Calibration::scaling_for(request::QuestionType type,
                                        const std::string& question_id) const {
  if (const auto it = by_question.find(question_id); it != by_question.end()) return &it->second;
  const auto& t = by_type[static_cast<std::size_t>(type)];
  return t ? &*t : nullptr;
}

std::vector<float> Calibration::apply(const request::Question& q,
                                      std::span<const float> logits) const {
  std::vector<float> out(logits.begin(), logits.end());
  const Scaling* s = scaling_for(q.type, q.id);
  if (s == nullptr) return out;
  for (float& l : out) l = static_cast<float>(static_cast<double>(l) / s->temperature);
  if (q.type == request::QuestionType::noul && !out.empty()) {
    out[0] = static_cast<float>(static_cast<double>(out[0]) + s->bias);
  }
  return out;
}

json::Value Calibration::to_json() const {
  std::vector<json::Value::Member> types;
  for (std::size_t t = 0; t < by_type.size(); ++t) {
    if (by_type[t]) {
      types.emplace_back(request::type_name(static_cast<request::QuestionType>(t)),
                         scaling_json(*by_type[t]));
    }
  }
  std::vector<json::Value::Member> questions;
  for (const auto& [id, s] : by_question) questions.emplace_back(id, scaling_json(s));
  return json::Value::object({{"format", json::Value::string(kFormat)},
                              {"types", json::Value::object(std::move(types))},
                              {"questions", json::Value::object(std::move(questions))}});
}

Calibration Calibration::from_json(const json::Value& v) {
  if (!v.is_object()) throw invalid_request("calibration: not a JSON object", "calibration");
  const json::Value* format = v.find("format");
  if (format == nullptr || !format->is_string() || format->as_string() != kFormat) {
    throw invalid_request(std::string("calibration: format must be \"") + kFormat + "\"", "format");
  }
  Calibration c;
  if (const json::Value* types = v.find("types"); types != nullptr) {
    if (!types->is_object()) throw invalid_request("calibration: types is not an object", "types");
    for (const auto& [name, s] : types->members()) {
      std::size_t t = 0;
      if (name == "noul") {
        t = 0;
      } else if (name == "choice") {
        t = 1;
      } else if (name == "score") {
        t = 2;
      } else {
        throw invalid_request("calibration: unknown question type \"" + name + "\"",
                              "types." + name);
      }
      c.by_type[t] = scaling_from(s, "types." + name);
    }
  }
  if (const json::Value* qs = v.find("questions"); qs != nullptr) {
    if (!qs->is_object()) {
      throw invalid_request("calibration: questions is not an object", "questions");
    }
    for (const auto& [id, s] : qs->members())
      c.by_question[id] = scaling_from(s, "questions." + id);
  }
  return c;
}

Calibration load_calibration(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw invalid_request("cannot read the calibration file " + file.string(), "calibration");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    return Calibration::from_json(json::parse(text));
  } catch (const Error& e) {
    throw invalid_request(file.string() + ": " + e.what(), e.param());
  }
}

}  // namespace clef::decision
