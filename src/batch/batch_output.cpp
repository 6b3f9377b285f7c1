#include "batch/batch_output.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "json/parse.hpp"
#include "json/render.hpp"
#include "util/error.hpp"

namespace clef::batch {

std::string answer_record(const json::Value& id, int line, int status, std::string_view response,
                          int truncated_tokens, const std::vector<std::string>& ignored_fields,
                          int ignored_fields_unlisted) {
  std::string out = "{\"id\":" + json::dumps_unsorted(id) + ",\"line\":" + std::to_string(line) +
                    ",\"status\":" + std::to_string(status) + ",\"response\":";
  out.append(response);
  if (truncated_tokens > 0)
    out.append(",\"truncated_tokens\":").append(std::to_string(truncated_tokens));
  if (!ignored_fields.empty()) {
    std::vector<json::Value> fields;
    for (const std::string& f : ignored_fields) fields.push_back(json::Value::string(f));
    out.append(",\"ignored_fields\":")
        .append(json::dumps_unsorted(json::Value::array(std::move(fields))));
  }
  if (ignored_fields_unlisted > 0) {
    out.append(",\"ignored_fields_unlisted\":").append(std::to_string(ignored_fields_unlisted));
  }
  return out.append("}\n");
}

std::string error_record(const json::Value& id, int line, int status, const std::string& code,
                         const std::string& message, const std::string& param) {
  const json::Value error = json::Value::object(
      {{"code", json::Value::string(code)},
       {"message", json::Value::string(message)},
       {"param", param.empty() ? json::Value::null() : json::Value::string(param)}});
  return "{\"id\":" + json::dumps_unsorted(id) + ",\"line\":" + std::to_string(line) +
         ",\"status\":" + std::to_string(status) + ",\"error\":" + json::dumps_unsorted(error) +
         "}\n";
}

namespace {

/// A record of a line no server decided (status 0, 429 or 503, or 401: the key was missing or
/// wrong, not the request): --resume tries it again.
bool undecided(const json::Value& record) {
  const json::Value* s = record.find("status");
  if (s == nullptr || !s->is_integer()) return false;
  const std::string& d = s->integer_digits();
  return d == "0" || d == "401" || d == "429" || d == "503";
}

}  // namespace

std::set<int> answered_lines(const std::filesystem::path& out) {
  std::set<int> lines;
  std::ifstream in(out, std::ios::binary);
  if (!in) return lines;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // torn: not a record
    try {
      const json::Value v = json::parse(std::string_view(text).substr(at, end - at));
      const json::Value* n = v.find("line");
      if (n != nullptr && n->is_integer() && n->integer_digits().size() <= 9 &&
          n->integer_digits()[0] != '-' && !undecided(v)) {
        lines.insert(std::stoi(n->integer_digits()));
      }
    } catch (const Error&) {
      // Not a record of ours: ignored.
    }
    at = end + 1;
  }
  return lines;
}

std::size_t drop_retryable_records(const std::filesystem::path& out) {
  std::ifstream in(out, std::ios::binary);
  if (!in) return 0;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  in.close();
  std::string kept;
  std::size_t dropped = 0;
  std::size_t at = 0;
  for (int line_no = 1; at < text.size(); ++line_no) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = std::string_view(text).substr(at, end - at);
    bool retry = false;
    bool record = false;
    try {
      const json::Value v = json::parse(line);
      record = v.is_object();
      retry = record && undecided(v);
    } catch (const Error&) {
    }
    if (!record && end < text.size()) {
      // A complete line that is not a JSON object is no record of clef batch: OUT is another
      // file, or was edited. Nothing is changed (a torn last line from a killed run is cut).
      throw invalid_request(out.string() + " line " + std::to_string(line_no) +
                                " is not a record of clef batch (a JSON object a line): resume "
                                "into the output of an earlier run, or give another OUT",
                            "out");
    }
    if (retry) {
      ++dropped;
    } else if (end < text.size()) {
      kept.append(line).append("\n");
    } else {
      kept.append(line);  // a torn last line stays for cut_torn_line
    }
    at = end + 1;
  }
  if (dropped > 0) {
    const std::filesystem::path tmp = out.string() + ".tmp";
    std::ofstream(tmp, std::ios::binary) << kept;
    std::filesystem::rename(tmp, out);
  }
  return dropped;
}

void check_resumed_records(const std::filesystem::path& out, std::span<const BatchItem> items) {
  std::ifstream in(out, std::ios::binary);
  if (!in) return;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::size_t at = 0;
  for (int out_line = 1; at < text.size(); ++out_line) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // torn: cut and decided again
    json::Value record;
    try {
      record = json::parse(std::string_view(text).substr(at, end - at));
    } catch (const Error&) {
      record = json::Value::null();  // drop_retryable_records refuses such lines
    }
    at = end + 1;
    const json::Value* line = record.is_object() ? record.find("line") : nullptr;
    const json::Value* id = record.is_object() ? record.find("id") : nullptr;
    if (line == nullptr || id == nullptr || !line->is_integer()) continue;
    const std::string& digits = line->integer_digits();
    const auto item = std::find_if(items.begin(), items.end(), [&](const BatchItem& i) {
      return std::to_string(i.line) == digits;
    });
    const std::string where = out.string() + " line " + std::to_string(out_line);
    if (item == items.end()) {
      throw invalid_request(where + " is the record of input line " + digits +
                                ", which the input does not have: OUT was written for another "
                                "input; give that input, or another OUT",
                            "out");
    }
    if (json::dumps_unsorted(item->id) != json::dumps_unsorted(*id)) {
      throw invalid_request(where + " is the record of input line " + digits + " with id " +
                                json::dumps_unsorted(*id) + ", but that line's id is " +
                                json::dumps_unsorted(item->id) +
                                ": OUT was written for another input (or the input changed); "
                                "give that input, or another OUT",
                            "out");
    }
  }
}

std::size_t cut_torn_line(const std::filesystem::path& out) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(out, ec);
  if (ec || size == 0) return 0;
  std::ifstream in(out, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::size_t last = text.rfind('\n');
  const std::size_t keep = last == std::string::npos ? 0 : last + 1;
  if (keep == text.size()) return 0;
  std::filesystem::resize_file(out, keep, ec);
  return text.size() - keep;
}

}  // namespace clef::batch
