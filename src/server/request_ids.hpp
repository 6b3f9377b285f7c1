#pragma once
// Request ids for the X-Request-Id header and the log: "req-<8 hex per server>-<counter>".

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace clef::server {

/// Hands out unique request ids. Thread-safe.
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

}  // namespace clef::server
