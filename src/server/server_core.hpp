#pragma once
// What the HTTP callbacks do, apart from owning the listening socket (http_server.cpp wires these
// methods into httplib). Internal to clef_server.
//
// Per request, on one httplib worker thread:
//   pre_route   assigns the request id, answers 404/405/415/413/503 from the headers alone
//               (before any body byte is read), else lets httplib dispatch;
//   handle_*    the endpoint (decisions: read body with limits, parse, queue, wait, answer);
//   on_error    fills an empty error answer (httplib's own 400/413/...) with the JSON error body;
//   post_route  sets X-Request-Id if missing, counts the request, writes the access line; an
//               answer saying "Connection: close" closes the connection (ConnectionState).

#include <httplib.h>
#include <atomic>
#include <memory>
#include <ostream>

#include "server/connection_state.hpp"
#include "server/decision_queue.hpp"
#include "server/error_reply.hpp"
#include "server/info_bodies.hpp"
#include "server/metrics.hpp"
#include "server/request_context.hpp"
#include "server/request_ids.hpp"
#include "server/server_config.hpp"
#include "server/server_log.hpp"

namespace clef::server {

class ServerCore {
 public:
  ServerCore(ServerConfig config, DecisionQueue::Factory factory, std::ostream& log_stream);

  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res);
  void handle_decision(const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& reader);
  void handle_health(const httplib::Request& req, httplib::Response& res);
  void handle_models(const httplib::Request& req, httplib::Response& res);
  void handle_metrics(const httplib::Request& req, httplib::Response& res);
  httplib::Server::HandlerResponse on_error(const httplib::Request& req, httplib::Response& res);
  void on_exception(const httplib::Request& req, httplib::Response& res, std::exception_ptr error);
  void post_route(const httplib::Request& req, httplib::Response& res);

  /// New requests get 503 from now on; /health says draining.
  void begin_draining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  Health health() const { return health_of(queue_.state(), draining()); }

  const ServerConfig& config() const { return config_; }
  DecisionQueue& queue() { return queue_; }
  Metrics& metrics() { return metrics_; }
  ServerLog& log() { return log_; }
  Connections& connections() { return connections_; }

 private:
  /// Writes `reply` into `res` (status, JSON body, Retry-After for 429/503).
  void send(httplib::Response& res, const ErrorReply& reply) const;
  /// send() and, when the request carries a body nobody will read, Connection: close.
  void refuse(const httplib::Request& req, httplib::Response& res, const ErrorReply& reply) const;
  /// The reply for an error thrown by DecisionQueue::submit (429 may become 503 per config).
  ErrorReply queue_refusal(const Error& error) const;
  /// Reads the body with the size limit and the body deadline; false after answering.
  bool read_body(const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader& reader, std::string& body);
  /// The current request id (this thread's context), or "-".
  std::string current_id();

  ServerConfig config_;
  ServerLog log_;
  Metrics metrics_;
  RequestIds ids_;
  RequestContexts contexts_;
  Connections connections_;
  std::atomic<bool> draining_{false};
  DecisionQueue queue_;  ///< last: its runtime thread starts at construction
};

}  // namespace clef::server
