#pragma once
// Running a batch: workers take input lines, a Sender decides each (HTTP endpoints with retries,
// or a local engine), records are appended to the output as they finish or in input order, and a
// summary says what happened.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "batch/batch_input.hpp"
#include "runtime/make_engine.hpp"

namespace clef::batch {

/// What deciding one line gave.
struct Answer {
  int status = 0;            ///< HTTP status; 0: no server answered
  std::string body;          ///< the response body (200) or error body
  std::string code;          ///< error code (not 200)
  std::string message;       ///< error message (not 200)
  std::string param;         ///< the field at fault (not 200; "" when none)
  int input_tokens = 0;      ///< usage.input_tokens (200)
  int attempts = 1;          ///< tries it took (retries + 1)
  int truncated_tokens = 0;  ///< state tokens cut to fit (200; X-Clef-Truncated-Tokens)
  std::vector<std::string> ignored_fields;  ///< unknown request fields (X-Clef-Ignored-Fields)
  /// Unknown fields the server's header left out for room (its "...+N"): counted, not named.
  int ignored_fields_unlisted = 0;
};

/// Decides one request.
class Sender {
 public:
  virtual ~Sender() = default;
  /// `worker`: which worker asks (spreads workers over endpoints). Never throws for one request.
  virtual Answer send(const BatchItem& item, int worker) = 0;
};

/// Sends to HTTP endpoints ("http://host:port", optionally with a path; default
/// /v1/decisions), with X-Clef-State-Key set (state_key.hpp). A connection failure, 429 or 503 is
/// retried, on the next endpoint, after a backoff (retry-after-ms, else Retry-After, when given,
/// at most 30 s; else 100 ms doubling up to 5 s), at most `retries` times; decisions are
/// idempotent, so a retry is safe. `api_key` (when not empty) goes with every request as
/// `Authorization: Bearer KEY`; a 401 is not retried. An https endpoint's certificate is verified
/// against the system's CAs, or against the PEM file `ca_cert` when given (a private CA, a
/// self-signed server).
class HttpSender : public Sender {
 public:
  HttpSender(std::vector<std::string> endpoints, int retries,
             std::chrono::seconds timeout = std::chrono::seconds(600), std::string api_key = {},
             std::string ca_cert = {});
  Answer send(const BatchItem& item, int worker) override;

 private:
  struct Endpoint {
    std::string base;  ///< scheme://host:port
    std::string path;  ///< /v1/decisions unless given
  };
  std::vector<Endpoint> endpoints_;
  int retries_;
  std::chrono::seconds timeout_;
  std::string api_key_;
  std::string ca_cert_;
};

/// Decides with a local engine, one request at a time (it owns one model).
class LocalSender : public Sender {
 public:
  explicit LocalSender(runtime::Engine& engine) : engine_(engine) {}
  Answer send(const BatchItem& item, int worker) override;

 private:
  runtime::Engine& engine_;
  std::mutex mutex_;
};

struct BatchOptions {
  int concurrency = 4;   ///< workers sending at once
  bool ordered = false;  ///< records in input order (else as they finish)
  /// Called after each line with (done, total, errors so far).
  std::function<void(std::size_t, std::size_t, std::size_t)> on_progress;
};

struct BatchSummary {
  std::size_t total = 0;                 ///< input lines
  std::size_t skipped = 0;               ///< already answered in the output (--resume)
  std::map<int, std::size_t> by_status;  ///< records written per status (0: no server)
  std::size_t retries = 0;
  std::uint64_t input_tokens = 0;
  std::size_t truncated = 0;            ///< decided lines whose state was cut to fit
  std::size_t with_ignored_fields = 0;  ///< decided lines with fields the contract ignores
  /// Lines no retry could decide as the run is set up (is_setup_error: the server's certificate
  /// not trusted, plain HTTP to an HTTPS port), and the first one's message.
  std::size_t setup_errors = 0;
  std::string first_setup_error;
  double wall_s = 0;
  double p50_ms = 0;  ///< latency of a line (all its attempts)
  double p99_ms = 0;
};

/// An answer that says the run is set up wrong rather than that this line failed: an untrusted
/// server certificate (--ca-cert), plain HTTP sent to an HTTPS port (https_required). Not retried.
bool is_setup_error(const Answer& answer);

/// Decides every item whose line is not in `done` and appends its record to `out` (created if
/// missing), flushed record by record so a killed run loses at most the line it was writing.
/// Throws clef::Error (invalid_request) when `out` cannot be written.
BatchSummary run_batch(const std::vector<BatchItem>& items, const std::set<int>& done,
                       Sender& sender, const std::filesystem::path& out,
                       const BatchOptions& options);

/// The summary as text: lines, per status, retries, tokens, wall time, rate, p50 / p99.
std::string format_summary(const BatchSummary& summary);

}  // namespace clef::batch
