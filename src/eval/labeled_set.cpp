#include "eval/labeled_set.hpp"

#include <fstream>
#include <iterator>
#include <optional>

#include "json/parse.hpp"
#include "util/error.hpp"
#include "util/text_lines.hpp"

namespace clef::eval {
namespace {

/// A gold value as the record's option id: "true"/"false" (also JSON booleans), a string id, or a
/// non-negative integer level; nothing for any other value.
std::optional<std::string> gold_id(const json::Value& v) {
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_string()) return v.as_string();
  if (v.is_integer() && v.integer_digits()[0] != '-') return v.integer_digits();
  return std::nullopt;
}

}  // namespace

LabeledSet parse_labeled_set(std::string_view text) {
  LabeledSet out;
  for (const auto& [line_no, line] : util::nonblank_lines(text)) {
    // Every bad line is skipped and counted, named by its number (as a label the model's
    // options do not hold is, once decided: calibrate.cpp).
    const auto skip = [&out, n = line_no](const std::string& why) {
      out.skipped.push_back("line " + std::to_string(n) + ": " + why);
    };
    json::Value v;
    try {
      v = json::parse(line);
    } catch (const Error& e) {
      skip(std::string("not JSON: ") + e.what());
      continue;
    }
    if (!v.is_object()) {
      skip("not a JSON object");
      continue;
    }
    LabeledRequest r;
    r.line = line_no;
    const json::Value* gold = nullptr;
    std::vector<json::Value::Member> members;
    for (const auto& [key, value] : v.members()) {
      if (key == "gold") {
        gold = &value;
      } else {
        members.emplace_back(key, value);
      }
    }
    if (gold == nullptr || !gold->is_object()) {
      skip("no \"gold\" object");
      continue;
    }
    std::string bad_gold;
    for (const auto& [question, value] : gold->members()) {
      if (value.is_null()) continue;
      if (const auto id = gold_id(value)) {
        r.gold.emplace_back(question, *id);
      } else if (bad_gold.empty()) {
        bad_gold = question;
      }
    }
    if (!bad_gold.empty()) {
      skip("gold." + bad_gold + " must be an option id, true/false, or a level index");
      continue;
    }
    if (r.gold.empty()) {
      skip("no labeled question in \"gold\"");
      continue;
    }
    r.request = json::Value::object(std::move(members));
    out.requests.push_back(std::move(r));
  }
  return out;
}

LabeledSet load_labeled_set(const std::filesystem::path& file) {
  return parse_labeled_set(util::read_lines_file(file, json::ParseLimits{}.max_bytes, "data"));
}

}  // namespace clef::eval
