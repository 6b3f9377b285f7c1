#pragma once
// The server's log on stderr: one line per request (access) plus rare events (start, shutdown,
// internal faults), as text (key=value) or JSON lines.

#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "server/server_config.hpp"

namespace clef::server {

/// What one access line reports. Negative numbers mean "not applicable" and are left out.
struct AccessRecord {
  std::string request_id;
  std::string method;
  std::string path;
  int status = 0;
  int input_tokens = -1;      ///< usage.input_tokens of a decided request
  int cached_tokens = -1;     ///< of those, resumed from the state cache
  double queue_wait_ms = -1;  ///< submit -> runtime thread took it
  double decision_ms = -1;    ///< runtime thread time
  double total_ms = -1;       ///< first handler -> response ready
  std::string key_name;       ///< the API key's name ("" when none was checked: left out)
  int truncated_tokens = -1;  ///< state tokens cut to fit (left out when 0 or not applicable)
  std::vector<std::string> ignored_fields;  ///< unknown request fields (left out when none)
  /// For a probe logged because its status changed: the probes answered since the last logged
  /// one, not logged (`probes_unlogged=N`; left out when negative).
  long quiet_probes = -1;
};

/// The longest path field_list() writes, encoded (a longer one is counted in its ",...+N").
inline constexpr std::size_t kMostFieldPathBytes = 256;
/// field_list()'s default bound: a header every HTTP client reads (Node's limit is 16 KiB for all
/// headers together) and one log field.
inline constexpr std::size_t kFieldListBytes = 1024;

/// Field paths as one header or log value of at most `max_bytes` bytes: comma-separated, each
/// byte outside printable ASCII and each ' ', ',', '%' and '+' percent-encoded (a question id may
/// hold any of them). Paths that do not fit (or are empty, or longer than kMostFieldPathBytes
/// encoded) are left out and counted in a last item "...+N", which no encoded path can be (a
/// path's '+' is %2B).
std::string field_list(const std::vector<std::string>& paths,
                       std::size_t max_bytes = kFieldListBytes);

/// One access line without the trailing newline. Text:
///   `<UTC time> access id=... method=POST path=/v1/decisions status=200 input_tokens=57
///   cached_tokens=36 queue_wait_ms=0.02 decision_ms=12.40 total_ms=12.90 key=ops
///   truncated_tokens=4156 ignored="temperature,questions.q.instruction"`
/// JSON: {"time":...,"event":"access","id":...,"method":...,"path":...,"status":...,...}.
/// Bytes outside printable ASCII in method/path/id are written as '?'.
std::string format_access(const AccessRecord& record, LogFormat format);

/// One event line without the trailing newline: `<UTC time> <level> [id=...] message` or
/// {"time":...,"event":level,"id":...,"message":...}.
std::string format_event(std::string_view level, std::string_view message,
                         std::string_view request_id, LogFormat format);

/// Writes whole lines to `out` (not owned; must outlive the log). Thread-safe. A line and its
/// newline are one write to `out`'s buffer (for std::cerr one write(2)), so that other writers of
/// the same stream (llama.cpp's warnings and errors, ggml's messages, on stderr) cannot land
/// between them (the suite once read a JSON log line with other text after its object).
class ServerLog {
 public:
  ServerLog(std::ostream& out, LogFormat format) : out_(out), format_(format) {}

  void access(const AccessRecord& record);
  void event(std::string_view level, std::string_view message, std::string_view request_id = {});

 private:
  void write_line(const std::string& line);

  std::mutex mutex_;
  std::ostream& out_;
  LogFormat format_;
};

}  // namespace clef::server
