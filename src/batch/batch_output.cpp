#include "batch/batch_output.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>

#include "json/parse.hpp"
#include "json/render.hpp"
#include "util/error.hpp"

namespace clef::batch {

namespace {

/// `{"id":...,"line":N,["line_sha256":"...",]"status":S` of a record.
std::string record_start(const RecordKey& key, int status) {
  std::string out =
      "{\"id\":" + json::dumps_unsorted(key.id) + ",\"line\":" + std::to_string(key.line);
  if (!key.line_sha256.empty()) out += ",\"line_sha256\":\"" + key.line_sha256 + "\"";
  return out + ",\"status\":" + std::to_string(status);
}

}  // namespace

RecordKey record_key(const BatchItem& item) {
  return {item.id, item.line, item.line_sha256};
}

std::string answer_record(const RecordKey& key, int status, std::string_view response,
                          int truncated_tokens, const std::vector<std::string>& ignored_fields,
                          int ignored_fields_unlisted) {
  std::string out = record_start(key, status) + ",\"response\":";
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

std::string error_record(const RecordKey& key, int status, const std::string& code,
                         const std::string& message, const std::string& param) {
  const json::Value error = json::Value::object(
      {{"code", json::Value::string(code)},
       {"message", json::Value::string(message)},
       {"param", param.empty() ? json::Value::null() : json::Value::string(param)}});
  return record_start(key, status) + ",\"error\":" + json::dumps_unsorted(error) + "}\n";
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

/// The text of `out`; nullopt when it cannot be read (a missing file: nothing to resume).
std::optional<std::string> read_text(const std::filesystem::path& out) {
  std::ifstream in(out, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Calls visit(line_no, line, record, complete) for every line of `text` (1-based numbers):
/// `record` is the line's JSON value, null when it is not JSON; `complete` is false for a last
/// line without its newline (torn by a killed run).
template <typename Visit>
void for_each_line(std::string_view text, Visit&& visit) {
  std::size_t at = 0;
  for (int line_no = 1; at < text.size(); ++line_no) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    json::Value record;
    try {
      record = json::parse(line);
    } catch (const Error&) {
      record = json::Value::null();
    }
    visit(line_no, line, record, end < text.size());
    at = end + 1;
  }
}

}  // namespace

std::set<int> answered_lines(const std::filesystem::path& out) {
  std::set<int> lines;
  const std::optional<std::string> text = read_text(out);
  if (!text) return lines;
  for_each_line(*text, [&](int, std::string_view, const json::Value& v, bool complete) {
    if (!complete || !v.is_object()) return;  // torn, or not a record of ours: ignored
    const json::Value* n = v.find("line");
    if (n != nullptr && n->is_integer() && n->integer_digits().size() <= 9 &&
        n->integer_digits()[0] != '-' && !undecided(v)) {
      lines.insert(std::stoi(n->integer_digits()));
    }
  });
  return lines;
}

std::size_t drop_retryable_records(const std::filesystem::path& out) {
  const std::optional<std::string> text = read_text(out);
  if (!text) return 0;
  std::string kept;
  std::size_t dropped = 0;
  for_each_line(
      *text, [&](int line_no, std::string_view line, const json::Value& v, bool complete) {
        if (!v.is_object() && complete) {
          // A complete line that is not a JSON object is no record of clef batch: OUT is another
          // file, or was edited. Nothing is changed (a torn last line from a killed run is cut).
          throw invalid_request(out.string() + " line " + std::to_string(line_no) +
                                    " is not a record of clef batch (a JSON object a line): resume "
                                    "into the output of an earlier run, or give another OUT",
                                "out");
        }
        if (v.is_object() && undecided(v)) {
          ++dropped;
        } else if (complete) {
          kept.append(line).append("\n");
        } else {
          kept.append(line);  // a torn last line stays for cut_torn_line
        }
      });
  if (dropped > 0) {
    const std::filesystem::path tmp = out.string() + ".tmp";
    std::ofstream(tmp, std::ios::binary) << kept;
    std::filesystem::rename(tmp, out);
  }
  return dropped;
}

void check_resumed_records(const std::filesystem::path& out, std::span<const BatchItem> items) {
  const std::optional<std::string> text = read_text(out);
  if (!text) return;
  for_each_line(
      *text, [&](int out_line, std::string_view, const json::Value& record, bool complete) {
        // A torn line is cut and decided again; lines that are no records are
        // drop_retryable_records' to refuse.
        const json::Value* line = complete && record.is_object() ? record.find("line") : nullptr;
        const json::Value* id = complete && record.is_object() ? record.find("id") : nullptr;
        if (line == nullptr || id == nullptr || !line->is_integer()) return;
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
        const json::Value* sha = record.find("line_sha256");
        // Only a record without the field is an older run's; any other value must be this line's.
        if (sha != nullptr && (!sha->is_string() || sha->as_string() != item->line_sha256)) {
          throw invalid_request(where + " is the record of input line " + digits +
                                    ", but that line's bytes are not the ones it was decided for "
                                    "(line_sha256 differs): OUT was written for another input (or "
                                    "the input changed); give that input, or another OUT",
                                "out");
        }
      });
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
