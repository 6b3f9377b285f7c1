#include "server/server_log.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "json/render.hpp"

namespace clef::server {

namespace {

std::string utc_now() {
  auto now = std::chrono::system_clock::now();
  auto seconds = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buffer;
}

/// Printable ASCII only, so a line stays one line and valid JSON/UTF-8.
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c < 0x21 || c > 0x7e) c = '?';
  }
  return out;
}

std::string millis(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", ms);
  return buffer;
}

class LineBuilder {
 public:
  explicit LineBuilder(LogFormat format) : format_(format) {}

  void text_prefix(std::string_view time, std::string_view level) {
    if (format_ == LogFormat::text)
      out_.append(time).append(" ").append(level);
    else {
      out_ = "{\"time\":";
      json::append_quoted(out_, time);
      field_string("event", level);
    }
  }
  /// ` key=value` in text; `,"key":"value"` in JSON (a string).
  void field_string(std::string_view key, std::string_view value) { field(key, value, true); }
  /// ` key=value` in text; `,"key":value` in JSON (a number or a literal, as given).
  void field_raw(std::string_view key, std::string_view value) { field(key, value, false); }
  void message(std::string_view text) {
    if (format_ == LogFormat::text)
      out_.append(" ").append(text);
    else
      field_string("message", text);
  }
  std::string finish() {
    if (format_ == LogFormat::json) out_.append("}");
    return std::move(out_);
  }

 private:
  void field(std::string_view key, std::string_view value, bool quoted) {
    if (format_ == LogFormat::text) {
      out_.append(" ").append(key).append("=").append(value);
      return;
    }
    out_.append(",");
    json::append_quoted(out_, key);
    out_.append(":");
    if (quoted) {
      json::append_quoted(out_, value);
    } else {
      out_.append(value);
    }
  }

  LogFormat format_;
  std::string out_;
};

}  // namespace

std::string field_list(const std::vector<std::string>& paths, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  // Room kept for the ",...+N" that says how many paths were left out.
  static constexpr std::size_t kMarkerRoom = 24;
  std::string out;
  std::size_t left_out = 0;
  for (const std::string& path : paths) {
    std::string encoded;
    for (const char c : path) {
      const auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u >= 0x7F || c == ',' || c == '%' || c == '+') {
        encoded += '%';
        encoded += kHex[u >> 4];
        encoded += kHex[u & 0xF];
      } else {
        encoded += c;
      }
    }
    const std::size_t room = max_bytes > kMarkerRoom ? max_bytes - kMarkerRoom : 0;
    if (encoded.empty() || encoded.size() > kMostFieldPathBytes ||
        out.size() + 1 + encoded.size() > room) {
      ++left_out;
      continue;
    }
    if (!out.empty()) out += ',';
    out += encoded;
  }
  if (left_out > 0) out += (out.empty() ? "...+" : ",...+") + std::to_string(left_out);
  return out;
}

std::string format_access(const AccessRecord& r, LogFormat format) {
  LineBuilder line(format);
  line.text_prefix(utc_now(), "access");
  line.field_string("id", printable(r.request_id));
  line.field_string("method", printable(r.method));
  line.field_string("path", printable(r.path));
  line.field_raw("status", std::to_string(r.status));
  if (r.input_tokens >= 0) line.field_raw("input_tokens", std::to_string(r.input_tokens));
  if (r.cached_tokens >= 0) line.field_raw("cached_tokens", std::to_string(r.cached_tokens));
  if (r.queue_wait_ms >= 0) line.field_raw("queue_wait_ms", millis(r.queue_wait_ms));
  if (r.decision_ms >= 0) line.field_raw("decision_ms", millis(r.decision_ms));
  if (r.total_ms >= 0) line.field_raw("total_ms", millis(r.total_ms));
  if (!r.key_name.empty()) line.field_string("key", printable(r.key_name));
  if (r.truncated_tokens > 0)
    line.field_raw("truncated_tokens", std::to_string(r.truncated_tokens));
  if (!r.ignored_fields.empty()) line.field_string("ignored", field_list(r.ignored_fields));
  if (r.quiet_probes >= 0) line.field_raw("probes_unlogged", std::to_string(r.quiet_probes));
  return line.finish();
}

std::string format_event(std::string_view level, std::string_view message,
                         std::string_view request_id, LogFormat format) {
  LineBuilder line(format);
  line.text_prefix(utc_now(), level);
  if (!request_id.empty()) line.field_string("id", printable(request_id));
  std::string text(message);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  line.message(text);
  return line.finish();
}

void ServerLog::access(const AccessRecord& record) {
  write_line(format_access(record, format_));
}

void ServerLog::event(std::string_view level, std::string_view message,
                      std::string_view request_id) {
  write_line(format_event(level, message, request_id, format_));
}

void ServerLog::write_line(const std::string& line) {
  std::string text;
  text.reserve(line.size() + 1);
  text.append(line).push_back('\n');
  std::lock_guard lock(mutex_);
  out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  out_.flush();
}

}  // namespace clef::server
