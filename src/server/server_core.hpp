#pragma once
// What the server does with each request, on clef's own request/response view (http_exchange.hpp);
// http_server.cpp wires these methods into cpp-httplib. Internal to clef_server.
//
// Per request, on one HTTP worker thread:
//   begin       assigns the request id and resolves the endpoint (RequestState, which travels
//               with the request);
//   pre_route   answers 401/404/405/415/411/413/503 and framing refusals from the headers alone
//               (before any body byte is read), else lets the endpoint run;
//   handle_*    the endpoint (decisions: read the body within limits, parse, prepare - validate,
//               encode, decode images - queue the prepared request, wait, answer);
//   on_error    the JSON error body for an answer the HTTP library produced itself;
//   finish      X-Request-Id, metrics, the access line.

#include <atomic>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>

#include "runtime/loop/decision_queue.hpp"
#include "server/agent_check.hpp"
#include "server/api_keys.hpp"
#include "server/endpoints.hpp"
#include "server/error_reply.hpp"
#include "server/http_exchange.hpp"
#include "server/metrics.hpp"
#include "server/server_config.hpp"
#include "server/server_log.hpp"

namespace clef::server {

class ServerCore {
 public:
  ServerCore(ServerConfig config, runtime::DecisionQueue::Factory factory,
             std::ostream& log_stream);

  /// The state of a request whose headers have just been parsed: `client_id` is its
  /// X-Request-Id header ("" when absent), `path` its path.
  RequestState begin(std::string_view client_id, std::string_view path);
  /// An answer when the headers alone refuse the request, else nullopt. With API keys set, a
  /// request to any endpoint but /health and the embedded web files needs one (401 with
  /// WWW-Authenticate otherwise); the accepted key's name goes into `state`.
  std::optional<HttpResponse> pre_route(const HttpRequest& req, RequestState& state);
  HttpResponse handle_decision(const HttpRequest& req, RequestState& state);
  HttpResponse handle_health() const;
  HttpResponse handle_models() const;
  HttpResponse handle_metrics() const;
  /// An embedded file (web_files.hpp); 404 for the playground's when it is off.
  HttpResponse handle_web(std::string_view path) const;
  /// The JSON error answer for a status the HTTP library answered itself (unparsable request
  /// line or headers, 414 ...): `status` is kept, the connection closes.
  HttpResponse library_refusal(int status) const;
  /// 500 for an exception that escaped a handler; logs it under the request's id.
  HttpResponse internal_fault(const RequestState& state, std::exception_ptr error);
  /// Logs and counts an answered request: `status` as sent.
  void finish(std::string_view method, std::string_view path, const RequestState& state,
              int status);
  /// The answer to a request refused before it was parsed (408: its headers missed their
  /// deadline; 414: request line too long; 431: headers too large; 429: no HTTP worker was free,
  /// sent as --overload-status with Retry-After, code "server_busy"): library_refusal(status)
  /// with its own request id, logged and counted like any other answer. `head`: what arrived of
  /// the request; its request line, when whole and short, gives the log its method and path.
  HttpResponse early_reply(int status, std::string_view head = {});

  /// New requests get 503 from now on; /health says draining.
  void begin_draining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  Health health() const { return health_of(queue_.state(), draining()); }
  /// What the HAProxy agent check answers now (agent_reply).
  std::string agent_status() const {
    return agent_reply(health(), queue_.depth(), queue_.in_flight(), queue_.capacity());
  }

  /// Re-reads --api-key-file (SIGHUP) and logs the outcome; the old keys stay on an error.
  void reload_api_keys();

  const ServerConfig& config() const { return config_; }
  runtime::DecisionQueue& queue() { return queue_; }
  const runtime::DecisionQueue& queue() const { return queue_; }
  ServerLog& log() { return log_; }

 private:
  /// `reply` as an answer (status, JSON body; for 429/503 Retry-After, and retry-after-ms: for a
  /// full queue runtime::DecisionQueue::slot_wait_ms(), else Retry-After in milliseconds).
  HttpResponse answer(const ErrorReply& reply) const;
  /// answer() and, when the request carries a body nobody will read, Connection: close.
  HttpResponse refuse(const HttpRequest& req, const ErrorReply& reply) const;
  /// Reads the body within the size limit and the body deadline (the connection's: reads fail
  /// after it); an answer when it could not: 413, 408 once the deadline has passed, else 400.
  /// Each chunk is charged to `memory` before it is kept (a refusal: its 413 or 429).
  std::optional<HttpResponse> read_body(const HttpRequest& req, const RequestState& state,
                                        std::string& body, util::MemoryBudget::Lease& memory) const;
  /// The answer for a finished, failed, dropped or cancelled decision.
  HttpResponse outcome_answer(runtime::DecisionOutcome& outcome, RequestState& state);

  ServerConfig config_;
  ServerLog log_;
  ApiKeys keys_;
  Metrics metrics_;
  RequestIds ids_;
  /// What requests in preparation may hold (--prepare-memory, --prepare-memory-per-request):
  /// each decision's body, its parsed JSON, its rendered state and its tokenization are charged
  /// to a lease from the body's first byte to the end of its preparation.
  util::MemoryBudget prepare_memory_;
  /// Probes (GET /health) since the last one logged, and that one's status (log_all_probes off).
  std::mutex probes_mutex_;
  int last_probe_status_ = 0;
  long quiet_probes_ = 0;
  std::atomic<bool> draining_{false};
  runtime::DecisionQueue queue_;  ///< last: its runtime thread starts at construction
};

}  // namespace clef::server
