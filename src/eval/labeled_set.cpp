#include "eval/labeled_set.hpp"

#include <fstream>
#include <iterator>

#include "json/parse.hpp"
#include "util/error.hpp"
#include "util/text_lines.hpp"

namespace clef::eval {
namespace {

[[noreturn]] void bad_line(int line, const std::string& what) {
  throw invalid_request("labeled data line " + std::to_string(line) + ": " + what, "gold");
}

/// A gold value as the record's option id: "true"/"false" (also JSON booleans), a string id, or a
/// non-negative integer level.
std::string gold_id(const json::Value& v, int line, const std::string& question) {
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_string()) return v.as_string();
  if (v.is_integer() && v.integer_digits()[0] != '-') return v.integer_digits();
  bad_line(line, "gold." + question + " must be an option id, true/false, or a level index");
}

}  // namespace

LabeledSet parse_labeled_set(std::string_view text) {
  LabeledSet out;
  for (const auto& [line_no, line] : util::nonblank_lines(text)) {
    json::Value v;
    try {
      v = json::parse(line);
    } catch (const Error& e) {
      bad_line(line_no, std::string("not JSON: ") + e.what());
    }
    if (!v.is_object()) bad_line(line_no, "not a JSON object");
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
      out.skipped.push_back("line " + std::to_string(line_no) + ": no \"gold\" object");
      continue;
    }
    for (const auto& [question, value] : gold->members()) {
      if (value.is_null()) continue;
      r.gold.emplace_back(question, gold_id(value, line_no, question));
    }
    if (r.gold.empty()) {
      out.skipped.push_back("line " + std::to_string(line_no) +
                            ": no labeled question in \"gold\"");
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
