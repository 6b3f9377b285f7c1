#pragma once
// clef's SystemOne HTTP server (cpp-httplib 0.57.1 from the pinned llama.cpp tree): POST
// /v1/systemone and /v1/decisions, GET /health, /v1/models, /metrics. HTTP worker threads parse,
// validate and prepare each request (tokens, spans, images); ONE runtime thread owns the Runner
// and decides the prepared requests in order (see runtime::DecisionQueue).
//
// Typical use:
//   HttpServer server(config, [&] { return runtime::make_engine(engine_config); }, std::cerr);
//   int port = server.bind();      // actual port when config.port == 0
//   std::thread t([&] { server.serve(); });
//   ... server.shutdown();         // drains queued and running decisions, then serve() returns
//   t.join();

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>

#include "runtime/loop/decision_queue.hpp"
#include "server/endpoints.hpp"
#include "server/server_config.hpp"

namespace clef::server {

class ServerCore;

class HttpServer {
 public:
  /// Validates `config` (throws clef::Error naming the flag). The model is loaded with `factory`
  /// on the runtime thread once bind() succeeds. Log lines go to `log` (not owned; must outlive
  /// the server).
  HttpServer(ServerConfig config, runtime::DecisionQueue::Factory factory, std::ostream& log);
  /// shutdown()s if still serving.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds config.host:config.port, starts loading the model, and returns the bound port (the
  /// picked one for port 0). Throws clef::Error (invalid_request, code "bind_failed", param "port")
  /// when the address cannot be bound; nothing is loaded then.
  int bind();

  /// The HAProxy agent-check port once bound (ServerConfig::agent_port), -1 when off.
  int agent_port() const;

  /// Accepts and answers connections until shutdown() has finished. Call after bind(), once.
  /// Returns at once if shutdown() already ran.
  void serve();

  /// Graceful stop, callable from any thread, idempotent: new requests get 503 and /health says
  /// draining; queued and running decisions finish and are answered; then the listening socket
  /// closes and serve() returns once every worker has written its answer (idle keep-alive
  /// connections close within the keep-alive timeout).
  void shutdown();

  /// Re-reads ServerConfig::api_key_file (what SIGHUP does); logs the outcome, keeps the old keys
  /// on an error. Connections and requests in flight are untouched.
  void reload_api_keys();

  Health health() const;
  /// The decision queue: whether the model is ready (wait_until_ready), the served model, why it
  /// failed to load, the state cache's counters.
  const runtime::DecisionQueue& queue() const;

 private:
  struct Listener;
  std::unique_ptr<ServerCore> core_;
  std::unique_ptr<Listener> listener_;
};

}  // namespace clef::server
