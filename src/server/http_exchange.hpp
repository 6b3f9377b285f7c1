#pragma once
// One HTTP exchange as clef's handlers see it, independent of cpp-httplib (http_server.cpp
// adapts httplib's types to these): the request view, the per-request state that travels with
// it from the first callback to the access log, request ids, and the checks made on a request's
// headers before its body is read.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/endpoints.hpp"
#include "transport/header_values.hpp"

namespace clef::server {

/// The response headers that carry a request's id, the same value in each: `X-Request-Id`
/// (clef's log, HAProxy) and `x-typesafe-request-id` (what TypeSafe's SDKs read).
inline constexpr std::string_view kRequestIdHeaders[] = {"X-Request-Id", "x-typesafe-request-id"};

/// What clef learns about one request on its way through the server, for the log and metrics.
/// Created when the request's headers have been parsed; travels with the request.
struct RequestState {
  std::string id;  ///< X-Request-Id of the answer and the log
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  Endpoint endpoint = Endpoint::unknown;  ///< resolved once, from the path
  int input_tokens = -1;                  ///< usage.input_tokens of a decided request
  int cached_tokens = -1;                 ///< of those, resumed from the state cache
  double queue_wait_ms = -1;              ///< submit -> the runtime thread took it
  double decision_ms = -1;                ///< runtime thread time
  std::string key_name;       ///< the API key's name when the server checked one ("" otherwise)
  int truncated_tokens = -1;  ///< state tokens cut from the state's end (record::Record)
  /// Fields of the request the contract does not know, ignored (request::Request::ignored_fields)
  std::vector<std::string> ignored_fields;
};

/// How reading a request body ended.
enum class BodyRead {
  complete,    ///< every byte arrived
  too_large,   ///< the HTTP layer refused it for its size (e.g. a chunk declared too large)
  incomplete,  ///< stopped by the sink, the peer gone, or a timeout
};

/// clef's read-only view of a request.
struct HttpRequest {
  std::string method;
  std::string path;
  /// Header name (any case) and value pairs as received, repeated names kept.
  std::vector<std::pair<std::string, std::string>> headers;
  /// Reads the body in pieces, giving each to `sink` (return false to stop). Empty for requests
  /// without a body.
  std::function<BodyRead(const std::function<bool(const char*, std::size_t)>& sink)> read_body;
  /// True once the client's connection is closed (asks the socket; cheap, non-blocking).
  std::function<bool()> connection_closed;

  /// The first value of header `name` (case-insensitive), "" when absent.
  std::string header(std::string_view name) const;
  /// Every value of header `name`, in order.
  std::vector<std::string> header_values(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

/// What a handler answers.
struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers

  /// Sets header `name` (replacing one of the same name).
  void set_header(std::string name, std::string value);
  /// True when the answer says "Connection: close".
  bool closes() const;
};

/// Hands out unique request ids "req-<8 hex per server>-<counter>". Thread-safe.
class RequestIds {
 public:
  /// The per-server prefix is random (std::random_device), so ids of two runs differ.
  RequestIds();

  /// A new id, e.g. "req-3f9a0c12-17".
  std::string next();

  /// The id to use for a request: the client's X-Request-Id when it is 1..64 characters of
  /// [A-Za-z0-9._:-], else next().
  std::string for_request(std::string_view client_id);

 private:
  std::string prefix_;
  std::atomic<std::uint64_t> counter_{0};
};

// a == b ignoring ASCII case (header names, auth schemes), as the connection loop reads them.
using transport::same_name;

/// True for a JSON media type: "application/json" or any "application/<x>+json", case-
/// insensitive, parameters (";charset=utf-8") ignored. An absent header (empty) is accepted.
bool is_json_content_type(std::string_view content_type) noexcept;

// The Content-Length header's value (nullopt when absent or not a plain decimal number), read as
// the connection loop frames the body it reads.
using transport::parse_content_length;

/// The charset parameter of a Content-Type, lower-cased and unquoted ("" when absent):
/// "application/json; charset=\"UTF-8\"" -> "utf-8".
std::string content_type_charset(std::string_view content_type);

/// Why a request's framing headers are unusable, or "" when they are fine. `lengths`: every
/// Content-Length value; `transfer_encoding`: the Transfer-Encoding value ("" when absent).
/// Refused: a Content-Length that is not a plain decimal number below 2^63 (negative, signed,
/// 20+ digits), Content-Length values that differ, Content-Length together with
/// Transfer-Encoding (RFC 9112 section 6.3: a smuggling vector), a transfer coding other than
/// "chunked".
std::string framing_problem(const std::vector<std::string>& lengths,
                            std::string_view transfer_encoding);

}  // namespace clef::server
