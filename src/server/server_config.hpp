#pragma once
// Settings of the HTTP server (`clef serve` flags), independent of the model.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "transport/connection_timeouts.hpp"
#include "transport/tls_context.hpp"

namespace clef::server {

/// Shape of the per-request log line on stderr.
enum class LogFormat {
  text,  ///< key=value pairs
  json,  ///< one JSON object per line
};

/// "text" or "json" -> LogFormat. Throws clef::Error (invalid_request, param "log-format").
LogFormat parse_log_format(std::string_view name);

/// HTTP server settings. Durations in seconds unless the name says otherwise.
struct ServerConfig {
  std::string host = "127.0.0.1";          ///< address to bind
  int port = 8080;                         ///< 0: the system picks a free port
  std::size_t max_body_bytes = 16u << 20;  ///< larger request bodies get 413
  /// The bytes of all request bodies being received at once (the connection loop reads them
  /// before a worker takes the request: transport::ConnectionLimits::body_buffer_bytes).
  /// 0: auto, body_buffer_for().
  std::size_t body_buffer_bytes = 0;
  /// Memory that all decision requests in preparation may hold at once (their bodies, parsed
  /// JSON, rendered states and tokenization, charged as they grow; util/memory_budget.hpp): a
  /// request that would pass it gets 429 (--overload-status). 0: no limit.
  std::size_t prepare_memory_bytes = std::size_t{1} << 30;
  /// What one request may hold while it is prepared: a request that would pass it gets 413.
  std::size_t prepare_memory_per_request_bytes = std::size_t{256} << 20;
  int max_json_depth = 128;     ///< deeper request JSON gets 400
  std::size_t queue_size = 64;  ///< decisions waiting for the runtime thread
  /// httplib worker threads (one per open connection); 0: auto, http_threads_for() - enough that
  /// the queue can fill (queue_size waiting + the decisions running) with threads to spare for
  /// refusals, /health and /metrics.
  int http_threads = 0;
  transport::ConnectionTimeouts timeouts;  ///< each connection's, as given to the connection loop
  int retry_after_s = 1;                   ///< Retry-After of 429/503 answers
  int overload_status = 429;               ///< status when the queue is full: 429 or 503
  /// Status of a decision request that is well-formed JSON but whose fields the contract refuses
  /// (code "invalid_request": a missing state, a wrong type or shape): 400 as the contract says,
  /// or 422 as TypeSafe's hosted API answers (its SDKs' UnprocessableEntityError). Malformed JSON
  /// (invalid_json) is 400 either way.
  int validation_status = 400;
  bool playground = true;  ///< serve the playground at GET / (the OpenAPI document always)
  int agent_port = -1;     ///< HAProxy agent-check port (agent_check.hpp); -1 off, 0 any
  LogFormat log_format = LogFormat::text;
  /// Log every GET /health (load-balancer probes, a few a second per balancer); off: a probe is
  /// logged only when its status differs from the previous probe's, with the count of the quiet
  /// ones between (`--log-probes`).
  bool log_all_probes = false;
  /// The served model is `clef serve --demo`'s random-weight test model: /v1/models says so
  /// (`random_weights: true`), since its answers are meaningless.
  bool random_weights = false;
  /// Accepted API keys (--api-key, repeatable) and a file of them (--api-key-file, re-read on
  /// SIGHUP; api_keys.hpp). With any key set, every endpoint but GET /health and the embedded
  /// web files answers 401 without one.
  std::vector<std::string> api_keys;
  std::string api_key_file;
  /// HTTPS with this PEM certificate (chain) and private key (--ssl-cert-file, --ssl-key-file;
  /// both or neither): checked at start (tls_context.hpp).
  std::string ssl_cert_file;
  std::string ssl_key_file;
  /// TLS 1.2 cipher suites, an OpenSSL cipher list (--ssl-ciphers): by default only ECDHE key
  /// exchange with AEAD (transport::kForwardSecretAeadCiphers).
  std::string ssl_ciphers = std::string(transport::kForwardSecretAeadCiphers);
};

/// Warnings for the secret files of `config` (--api-key-file, --ssl-key-file) that users other
/// than their owner may read or write (mode bits of group or others): one message a file, naming
/// it, its mode and the fix (`chmod 600`). Files that cannot be stat'ed give none (their loading
/// says why).
std::vector<std::string> secret_file_warnings(const ServerConfig& config);

/// The base URL a client reaches the server at: "http[s]://HOST:PORT", an IPv6 address in
/// brackets ("http://[::1]:8080", RFC 3986 section 3.2.2).
std::string base_url(const ServerConfig& config, int port);

/// HTTP worker threads kept beyond the decisions a server can hold (auto --http-threads).
inline constexpr int kSpareHttpThreads = 16;
/// HTTP worker threads that serve only light requests (GET /health, /metrics, /v1/models), so a
/// load balancer's probes never wait behind decisions (connection_pool.hpp).
inline constexpr int kReservedHttpThreads = 2;

/// The worker threads `config` asks for: config.http_threads, or for 0 queue_size + `parallel`
/// (decisions running at once) + kSpareHttpThreads.
int http_threads_for(const ServerConfig& config, int parallel);

/// The bytes of request bodies the connection loop may hold at once: config.body_buffer_bytes,
/// or for 0 the larger of 256 MiB and what one chunked body of --max-body may take as it arrives
/// (transport::max_framed_body_bytes).
std::size_t body_buffer_for(const ServerConfig& config);

/// Throws clef::Error (invalid_request) naming the flag when a value is out of range.
void validate(const ServerConfig& config);

}  // namespace clef::server
