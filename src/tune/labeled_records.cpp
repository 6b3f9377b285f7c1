#include "tune/labeled_records.hpp"

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>

#include "json/parse.hpp"
#include "json/render.hpp"
#include "util/error.hpp"
#include "util/text_lines.hpp"

namespace clef::tune {
namespace {

constexpr double kSumTolerance = 1e-6;

[[noreturn]] void refuse(const std::string& where, const std::string& what,
                         const std::string& field) {
  throw invalid_request(where + ": " + what, field);
}

/// A gold value as the record's option id: "true"/"false" (also JSON booleans), a string id, or a
/// non-negative integer level.
std::string gold_id(const json::Value& v, const std::string& where, const std::string& question) {
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_string()) return v.as_string();
  if (v.is_integer() && v.integer_digits()[0] != '-') return v.integer_digits();
  refuse(where, "gold." + question + " must be an option id, true/false, or a level index", "gold");
}

/// A JSON number as a double (integers by their digits; one too large for a double is +-inf), or
/// nullopt.
std::optional<double> number(const json::Value& v) {
  if (v.is_float()) return v.as_double();
  if (v.is_integer()) return std::strtod(v.integer_digits().c_str(), nullptr);
  return std::nullopt;
}

QuestionLabel soft_label(const std::string& question, const json::Value& v,
                         const std::string& where) {
  const std::string field = "targets." + question;
  if (!v.is_object() || v.members().empty()) {
    refuse(where, field + " must be an object {option id: probability, ...}", "targets");
  }
  QuestionLabel label{question, {}, false};
  double sum = 0;
  for (const auto& [option, p] : v.members()) {
    const std::optional<double> x = number(p);
    if (!x || !std::isfinite(*x)) {
      refuse(where, field + "." + option + " must be a finite number", "targets");
    }
    if (*x < 0) {
      refuse(where, field + "." + option + " is negative (" + json::dumps(p) + ")", "targets");
    }
    sum += *x;
    label.probs.emplace_back(option, *x);
  }
  if (std::abs(sum - 1.0) > kSumTolerance) {
    refuse(where, field + " sums to " + std::to_string(sum) + ", not 1", "targets");
  }
  return label;
}

}  // namespace

std::vector<LabeledRecord> parse_labeled_records(std::string_view text, const std::string& file) {
  std::vector<LabeledRecord> out;
  std::map<std::string, std::string> id_at;
  for (const auto& [line_no, line] : util::nonblank_lines(text)) {
    const std::string where = file + " line " + std::to_string(line_no);
    json::Value v;
    try {
      v = json::parse(line);
    } catch (const Error& e) {
      refuse(where, std::string("not JSON: ") + e.what(), "data");
    }
    if (!v.is_object()) refuse(where, "not a JSON object", "data");
    LabeledRecord r;
    r.where = where;
    r.id = where;
    const json::Value* gold = nullptr;
    const json::Value* targets = nullptr;
    std::vector<json::Value::Member> members;
    for (const auto& [key, value] : v.members()) {
      if (key == "gold") {
        gold = &value;
      } else if (key == "targets") {
        targets = &value;
      } else if (key == "id") {
        if (value.is_string()) {
          r.id = value.as_string();
        } else if (value.is_integer()) {
          r.id = value.integer_digits();
        } else {
          refuse(where, "\"id\" must be a string or an integer", "id");
        }
        const auto [it, fresh] = id_at.emplace(r.id, where);
        if (!fresh)
          refuse(where, "id " + json::dumps(value) + " is also used at " + it->second, "id");
      } else {
        members.emplace_back(key, value);
      }
    }
    if (gold != nullptr && !gold->is_object()) refuse(where, "\"gold\" must be an object", "gold");
    if (targets != nullptr && !targets->is_object()) {
      refuse(where, "\"targets\" must be an object", "targets");
    }
    if (gold != nullptr) {
      for (const auto& [question, value] : gold->members()) {
        if (value.is_null()) continue;
        r.labels.push_back({question, {{gold_id(value, where, question), 1.0}}, true});
      }
    }
    if (targets != nullptr) {
      for (const auto& [question, value] : targets->members()) {
        for (const QuestionLabel& l : r.labels) {
          if (l.question == question) {
            refuse(where, "question \"" + question + "\" is labeled in both gold and targets",
                   "targets");
          }
        }
        r.labels.push_back(soft_label(question, value, where));
      }
    }
    if (r.labels.empty()) {
      refuse(where,
             "no label: give \"gold\" (question id -> option) or \"targets\" (question "
             "id -> {option: probability})",
             "gold");
    }
    r.request = json::Value::object(std::move(members));
    out.push_back(std::move(r));
  }
  if (out.empty()) throw invalid_request(file + ": no labeled records (the file is empty)", "data");
  return out;
}

std::vector<LabeledRecord> load_labeled_records(const std::filesystem::path& file) {
  return parse_labeled_records(util::read_lines_file(file, json::ParseLimits{}.max_bytes, "data"),
                               file.string());
}

void check_distinct(const std::vector<LabeledRecord>& records) {
  std::map<std::string, const LabeledRecord*> seen;
  for (const LabeledRecord& r : records) {
    const auto [it, fresh] = seen.emplace(json::dumps(r.request), &r);
    if (!fresh) {
      throw invalid_request(r.where + ": the same request as " + it->second->where +
                                " (labels aside): give each request once; several people's "
                                "labels of one request go into its \"targets\" (the share of "
                                "each option)",
                            "data");
    }
  }
}

void check_disjoint(const std::vector<LabeledRecord>& training,
                    const std::vector<LabeledRecord>& validation) {
  std::map<std::string, const LabeledRecord*> ids;
  std::map<std::string, const LabeledRecord*> requests;
  for (const LabeledRecord& r : training) {
    ids.emplace(r.id, &r);
    requests.emplace(json::dumps(r.request), &r);
  }
  for (const LabeledRecord& r : validation) {
    if (r.id != r.where) {
      if (const auto it = ids.find(r.id); it != ids.end() && it->second->id != it->second->where) {
        throw invalid_request(
            r.where + ": id \"" + r.id + "\" is also a training record (" + it->second->where + ")",
            "validation");
      }
    }
    if (const auto it = requests.find(json::dumps(r.request)); it != requests.end()) {
      throw invalid_request(r.where + ": the same request is a training record (" +
                                it->second->where +
                                "): validation must be on records not trained on",
                            "validation");
    }
  }
}

}  // namespace clef::tune
