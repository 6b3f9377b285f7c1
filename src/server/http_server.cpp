#include "server/http_server.hpp"

#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "server/connection_loop.hpp"
#include "server/server_core.hpp"

namespace clef::server {

/// The httplib server and the bookkeeping that makes stop() race-free with serve().
struct HttpServer::Listener {
  explicit Listener(ServerCore& core) : http(core.connections(), limits_of(core.config())) {}
  static ConnectionLimits limits_of(const ServerConfig& config) {
    ConnectionLimits limits;
    limits.read_timeout_s = config.read_timeout_s;
    limits.write_timeout_s = config.write_timeout_s;
    limits.keep_alive_timeout_s = config.keep_alive_timeout_s;
    limits.header_timeout_s = config.header_timeout_s;
    limits.body_timeout_s = config.body_timeout_s;
    return limits;
  }
  ConnectionServer http;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool bound = false;
  bool serving = false;
  bool serve_done = false;
  bool stop_requested = false;
  bool shut_down = false;
};

namespace {

void install_routes(httplib::Server& http, ServerCore& core) {
  using httplib::ContentReader;
  using httplib::Request;
  using httplib::Response;
  const ServerConfig& config = core.config();
  int threads = config.http_threads;
  // httplib takes ownership of the queue it gets (its API); nothing else allocates raw.
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Timeouts and keep-alive are ConnectionServer's (ConnectionLimits); these only feed httplib's
  // Keep-Alive response header and the accepted sockets' SO_RCVTIMEO/SO_SNDTIMEO.
  http.set_read_timeout(config.read_timeout_s, 0);
  http.set_write_timeout(config.write_timeout_s, 0);
  http.set_keep_alive_timeout(config.keep_alive_timeout_s);
  http.set_keep_alive_max_count(1000);
  http.set_payload_max_length(config.max_body_bytes);
  http.set_tcp_nodelay(true);
  // httplib's default also sets SO_REUSEPORT, which would let a second server bind the same port
  // and silently take half the connections; keep only SO_REUSEADDR (fast restarts).
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });

  http.set_pre_routing_handler(
      [&core](const Request& req, Response& res) { return core.pre_route(req, res); });
  // Expect: 100-continue: refuse from the headers before the client sends the body. httplib
  // writes this answer without its usual Content-Length, so add it; the body will not be read,
  // so the connection closes after it.
  http.set_expect_100_continue_handler([&core](const Request& req, Response& res) {
    if (core.pre_route(req, res) != httplib::Server::HandlerResponse::Handled) return 100;
    res.set_header("Content-Length", std::to_string(res.body.size()));
    if (!res.has_header("Connection")) res.set_header("Connection", "close");
    return res.status;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [&core](const Request& req, Response& res) { return core.on_error(req, res); }));
  http.set_exception_handler([&core](const Request& req, Response& res, std::exception_ptr e) {
    core.on_exception(req, res, e);
  });
  http.set_post_routing_handler(
      [&core](const Request& req, Response& res) { core.post_route(req, res); });

  auto decide = [&core](const Request& req, Response& res, const ContentReader& reader) {
    core.handle_decision(req, res, reader);
  };
  http.Post("/v1/systemone", decide);
  http.Post("/v1/decisions", decide);
  http.Get("/health", [&core](const Request& req, Response& res) { core.handle_health(req, res); });
  http.Get("/v1/models",
           [&core](const Request& req, Response& res) { core.handle_models(req, res); });
  http.Get("/metrics",
           [&core](const Request& req, Response& res) { core.handle_metrics(req, res); });
}

}  // namespace

HttpServer::HttpServer(ServerConfig config, DecisionQueue::Factory factory, std::ostream& log) {
  validate(config);
  core_ = std::make_unique<ServerCore>(std::move(config), std::move(factory), log);
  listener_ = std::make_unique<Listener>(*core_);
  install_routes(listener_->http, *core_);
}

HttpServer::~HttpServer() {
  shutdown();
}

int HttpServer::bind() {
  const ServerConfig& config = core_->config();
  int port = config.port;
  bool ok = false;
  if (port == 0) {
    port = listener_->http.bind_to_any_port(config.host);
    ok = port > 0;
  } else {
    ok = listener_->http.bind_to_port(config.host, port);
  }
  if (ok && !listener_->http.set_listen_backlog(SOMAXCONN)) ok = false;
  if (!ok) {
    throw Error(ErrorKind::internal, "bind_failed",
                "cannot listen on " + config.host + ":" + std::to_string(config.port) +
                    " (address in use or not local?)");
  }
  {
    std::lock_guard lock(listener_->mutex);
    listener_->bound = true;
  }
  core_->queue().start();  // load the model only once the address is ours
  return port;
}

void HttpServer::serve() {
  {
    std::lock_guard lock(listener_->mutex);
    if (!listener_->bound || listener_->stop_requested || listener_->serving) return;
    listener_->serving = true;
  }
  listener_->http.listen_after_bind();
  std::lock_guard lock(listener_->mutex);
  listener_->serve_done = true;
  listener_->done_cv.notify_all();
}

void HttpServer::shutdown() {
  {
    std::lock_guard lock(listener_->mutex);
    if (listener_->shut_down) return;
    listener_->shut_down = true;
  }
  core_->begin_draining();
  core_->log().event("info", "draining: finishing queued and running decisions");
  core_->queue().drain();

  std::unique_lock lock(listener_->mutex);
  listener_->stop_requested = true;
  if (listener_->serving) {
    // httplib's stop() only acts once its accept loop runs; wait for that, then stop once.
    while (!listener_->serve_done && !listener_->http.is_running()) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lock.lock();
    }
    if (!listener_->serve_done) {
      lock.unlock();
      listener_->http.stop();
      lock.lock();
    }
    listener_->done_cv.wait(lock, [this] { return listener_->serve_done; });
  }
  core_->log().event("info", "stopped");
}

bool HttpServer::wait_until_ready(std::chrono::milliseconds timeout) const {
  return core_->queue().wait_until_ready(timeout);
}

Health HttpServer::health() const {
  return core_->health();
}

std::optional<ModelInfo> HttpServer::model() const {
  return core_->queue().model();
}

std::string HttpServer::load_error() const {
  return core_->queue().load_error();
}

}  // namespace clef::server
