#include "server/http_server.hpp"

#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "server/http_exchange.hpp"
#include "server/routes.hpp"
#include "server/server_core.hpp"
#include "server/web_files.hpp"
#include "transport/connection_loop.hpp"

namespace clef::server {

namespace {

/// `res` as the bytes of an HTTP/1.1 answer (status line with httplib's reason phrase, Content-
/// Type, Content-Length, its headers, body), for answers the connection loop writes itself.
std::string raw_answer(const HttpResponse& res) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " ";
  out.append(httplib::status_message(res.status)).append("\r\nContent-Type: ");
  out.append(res.content_type).append("\r\nContent-Length: ");
  out.append(std::to_string(res.body.size())).append("\r\n");
  for (const auto& [name, value] : res.headers)
    out.append(name).append(": ").append(value).append("\r\n");
  return out.append("\r\n").append(res.body);
}

}  // namespace

/// The httplib server and the bookkeeping that makes stop() race-free with serve().
struct HttpServer::Listener {
  explicit Listener(ServerCore& core)
      : http(
            limits_of(core.config()),
            [&core](int status, std::string_view head) {
              return raw_answer(core.early_reply(status, head));
            },
            is_light_request, tls_of(core.config())) {}
  /// The certificate and key of --ssl-cert-file/--ssl-key-file, checked now; nullptr for HTTP.
  static std::shared_ptr<const transport::TlsContext> tls_of(const ServerConfig& config) {
    if (config.ssl_cert_file.empty()) return nullptr;
    return std::make_shared<const transport::TlsContext>(config.ssl_cert_file, config.ssl_key_file,
                                                         config.ssl_ciphers);
  }
  static transport::ConnectionLimits limits_of(const ServerConfig& config) {
    transport::ConnectionLimits limits;
    limits.timeouts = config.timeouts;
    limits.max_body_bytes = config.max_body_bytes;
    limits.body_buffer_bytes = body_buffer_for(config);
    // Auto (0) without the engine's --parallel at hand: `clef serve` resolves it with it first.
    limits.worker_threads = http_threads_for(config, 1);
    limits.reserved_threads = kReservedHttpThreads;
    return limits;
  }
  transport::ConnectionServer http;
  std::unique_ptr<AgentCheck> agent;  ///< --agent-port, from bind() to the end of shutdown()
  std::mutex mutex;
  std::condition_variable done_cv;
  bool bound = false;
  bool serving = false;
  bool serve_done = false;
  bool stop_requested = false;
  bool shut_down = false;
};

namespace {

// The adapter between cpp-httplib's types and clef's view (http_exchange.hpp). A request's
// RequestState lives in its httplib::Response's user_data from the pre-routing callback to the
// post-routing one: per-request state travels with the request.
constexpr const char* kStateKey = "clef.request";

HttpRequest view_of(const httplib::Request& req) {
  HttpRequest view;
  view.method = req.method;
  view.path = req.path;
  view.headers.assign(req.headers.begin(), req.headers.end());
  view.connection_closed = req.is_connection_closed;
  return view;
}

/// The request's state, created on first use (httplib answers some requests itself, before the
/// pre-routing callback).
RequestState& state_of(ServerCore& core, const httplib::Request& req, httplib::Response& res) {
  if (RequestState* state = res.user_data.get<RequestState>(kStateKey)) return *state;
  res.user_data.set(kStateKey, core.begin(req.get_header_value("X-Request-Id"), req.path));
  return *res.user_data.get<RequestState>(kStateKey);
}

/// Sets header `name` on `res`, replacing any earlier value (httplib's set_header adds one).
void replace_header(httplib::Response& res, const std::string& name, const std::string& value) {
  res.headers.erase(name);
  res.set_header(name, value);
}

/// Sets the request's id on `res` under every name in kRequestIdHeaders.
void set_request_id(httplib::Response& res, const std::string& id) {
  for (std::string_view name : kRequestIdHeaders) replace_header(res, std::string(name), id);
}

void apply(const HttpResponse& from, const RequestState& state, httplib::Response& res) {
  res.status = from.status;
  res.set_content(from.body, from.content_type);
  for (const auto& [name, value] : from.headers) {
    // httplib 0.57.1 itself closes the connection after every answer >= 400.
    if (from.status >= 400 && name == "Connection") continue;
    replace_header(res, name, value);
  }
  set_request_id(res, state.id);
}

void install_routes(httplib::Server& http, ServerCore& core) {
  using httplib::ContentReader;
  using httplib::Request;
  using httplib::Response;
  using HandlerResponse = httplib::Server::HandlerResponse;
  const ServerConfig& config = core.config();
  // Timeouts and keep-alive are ConnectionServer's (ConnectionLimits); these only feed httplib's
  // Keep-Alive response header and the accepted sockets' SO_RCVTIMEO/SO_SNDTIMEO.
  http.set_read_timeout(config.timeouts.read_s, 0);
  http.set_write_timeout(config.timeouts.write_s, 0);
  http.set_keep_alive_timeout(config.timeouts.keep_alive_s);
  http.set_keep_alive_max_count(1000);
  http.set_payload_max_length(config.max_body_bytes);
  http.set_tcp_nodelay(true);
  // httplib's default also sets SO_REUSEPORT, which would let a second server bind the same port
  // and silently take half the connections; keep only SO_REUSEADDR (fast restarts).
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });

  // Expect: 100-continue needs no handler: httplib 0.57.1 sends "100 Continue" only when the
  // decision handler reads the body, so a request refused from its headers never gets it.
  http.set_pre_routing_handler([&core](const Request& req, Response& res) {
    const HttpRequest view = view_of(req);
    RequestState& state = state_of(core, req, res);
    set_request_id(res, state.id);
    std::optional<HttpResponse> refused = core.pre_route(view, state);
    if (!refused) return HandlerResponse::Unhandled;
    apply(*refused, state, res);
    return HandlerResponse::Handled;
  });
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([&core](const Request& req, Response& res) {
        if (!res.body.empty()) return HandlerResponse::Unhandled;  // clef's own answer
        apply(core.library_refusal(res.status), state_of(core, req, res), res);
        return HandlerResponse::Handled;
      }));
  http.set_exception_handler([&core](const Request& req, Response& res, std::exception_ptr e) {
    RequestState& state = state_of(core, req, res);
    apply(core.internal_fault(state, e), state, res);
  });
  http.set_post_routing_handler([&core](const Request& req, Response& res) {
    RequestState& state = state_of(core, req, res);
    if (!res.has_header("X-Request-Id")) set_request_id(res, state.id);
    if (res.get_header_value("Connection") == "close") res.headers.erase("Keep-Alive");
    core.finish(req.method, req.path, state, res.status);
  });

  auto decide = [&core](const Request& req, Response& res, const ContentReader& reader) {
    HttpRequest view = view_of(req);
    view.read_body = [&reader, &res](const std::function<bool(const char*, std::size_t)>& sink) {
      if (reader([&sink](const char* data, std::size_t size) { return sink(data, size); })) {
        return BodyRead::complete;
      }
      // httplib marks a body it refused for its size (over set_payload_max_length, or a chunk
      // declared larger: cmake/patches) with 413 on the response.
      return res.status == 413 ? BodyRead::too_large : BodyRead::incomplete;
    };
    RequestState& state = state_of(core, req, res);
    apply(core.handle_decision(view, state), state, res);
  };
  // The route table (routes.hpp): decisions read their body, GET routes call their handler.
  for (const Route& route : routes()) {
    if (route.path.empty()) continue;  // the embedded files below; unknown paths: pre_route
    const std::string path(route.path);
    if (is_decision(route.endpoint)) {
      http.Post(path, decide);
    } else {
      http.Get(path, [&core, handler = route.get](const Request& req, Response& res) {
        apply((core.*handler)(), state_of(core, req, res), res);
      });
    }
  }
  for (const WebFile& file : web_files()) {
    const std::string path(file.path);
    http.Get(path, [&core, path](const Request& req, Response& res) {
      apply(core.handle_web(path), state_of(core, req, res), res);
    });
  }
}

}  // namespace

HttpServer::HttpServer(ServerConfig config, runtime::DecisionQueue::Factory factory,
                       std::ostream& log) {
  validate(config);
  core_ = std::make_unique<ServerCore>(std::move(config), std::move(factory), log);
  listener_ = std::make_unique<Listener>(*core_);
  install_routes(listener_->http, *core_);
}

HttpServer::~HttpServer() {
  shutdown();
}

int HttpServer::agent_port() const {
  return listener_->agent ? listener_->agent->port() : -1;
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
  if (!ok) {
    // A start refusal like any other (exit 2): the port asked for cannot be had.
    throw Error(ErrorKind::invalid_request, "bind_failed",
                "cannot listen on " + config.host + ":" + std::to_string(config.port) +
                    " (address in use or not local?): another server may hold the port; "
                    "--port N takes another, --port 0 any free one",
                "port");
  }
  if (config.agent_port >= 0) {
    ServerCore& core = *core_;
    listener_->agent = std::make_unique<AgentCheck>(config.host, config.agent_port,
                                                    [&core] { return core.agent_status(); });
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
  listener_->agent.reset();  // said "drain" until the last answer was written
  core_->log().event("info", "stopped");
}

void HttpServer::reload_api_keys() {
  core_->reload_api_keys();
}

Health HttpServer::health() const {
  return core_->health();
}

const runtime::DecisionQueue& HttpServer::queue() const {
  return core_->queue();
}

}  // namespace clef::server
