#include "server/server_core.hpp"

#include "server/http_checks.hpp"
#include "server/routes.hpp"
#include "server/warmup_request.hpp"

namespace clef::server {

using HandlerResponse = httplib::Server::HandlerResponse;

namespace {

constexpr const char* kJson = "application/json";

/// True unless the request surely has no body: any Transfer-Encoding, or a Content-Length other
/// than a plain 0 (an unparsable one included).
bool has_unread_body(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  if (!req.has_header("Content-Length")) return false;
  auto length = parse_content_length(req.get_header_value("Content-Length"));
  return !length || *length > 0;
}

}  // namespace

ServerCore::ServerCore(ServerConfig config, DecisionQueue::Factory factory,
                       std::ostream& log_stream)
    : config_(std::move(config)),
      log_(log_stream, config_.log_format),
      queue_(std::move(factory), config_.queue_size, warmup_request()) {}

void ServerCore::send(httplib::Response& res, const ErrorReply& reply) const {
  res.status = reply.status;
  res.set_content(reply.body(), kJson);
  if (reply.status == 429 || reply.status == 503) {
    res.set_header("Retry-After", std::to_string(config_.retry_after_s));
  }
}

void ServerCore::refuse(const httplib::Request& req, httplib::Response& res,
                        const ErrorReply& reply) const {
  send(res, reply);
  if (has_unread_body(req)) res.set_header("Connection", "close");
}

ErrorReply ServerCore::queue_refusal(const Error& error) const {
  ErrorReply reply = ErrorReply::from(error);
  if (error.kind() == ErrorKind::overloaded) reply.status = config_.overload_status;
  return reply;
}

std::string ServerCore::current_id() {
  RequestContext* context = contexts_.current();
  return context ? context->id : "-";
}

HandlerResponse ServerCore::pre_route(const httplib::Request& req, httplib::Response& res) {
  RequestContext& context = contexts_.begin(ids_.for_request(req.get_header_value("X-Request-Id")));
  res.set_header("X-Request-Id", context.id);

  // Framing first, for every path: a request whose body length is unclear is refused and its
  // connection closed, so nothing after it is taken for a request.
  std::vector<std::string> lengths;
  for (auto [it, end] = req.headers.equal_range("Content-Length"); it != end; ++it) {
    lengths.push_back(it->second);
  }
  if (std::string problem = framing_problem(lengths, req.get_header_value("Transfer-Encoding"));
      !problem.empty()) {
    send(res, ErrorReply::from(invalid_request(problem)));
    res.set_header("Connection", "close");
    return HandlerResponse::Handled;
  }

  Endpoint endpoint = find_endpoint(req.path);
  if (endpoint == Endpoint::unknown) {
    refuse(req, res, ErrorReply::not_found(req.method, req.path));
    return HandlerResponse::Handled;
  }
  if (!method_allowed(endpoint, req.method)) {
    refuse(req, res,
           ErrorReply::method_not_allowed(req.method, req.path, allowed_method(endpoint)));
    res.set_header("Allow", endpoint == Endpoint::systemone || endpoint == Endpoint::decisions
                                ? "POST"
                                : "GET, HEAD");
    return HandlerResponse::Handled;
  }
  if (endpoint != Endpoint::systemone && endpoint != Endpoint::decisions) {
    return HandlerResponse::Unhandled;
  }
  // A decision request: everything that can be refused from the headers is refused here,
  // before httplib reads the body.
  if (draining()) {
    refuse(req, res,
           ErrorReply::from(
               Error(ErrorKind::unavailable, "shutting_down", "the server is shutting down")));
    return HandlerResponse::Handled;
  }
  if (queue_.state() != QueueState::ready) {
    bool failed = queue_.state() == QueueState::failed;
    refuse(req, res,
           ErrorReply::from(Error(
               ErrorKind::unavailable, failed ? "model_failed" : "model_loading",
               failed ? "the model failed to load" : "the model is still loading; retry shortly")));
    return HandlerResponse::Handled;
  }
  std::string content_type = req.get_header_value("Content-Type");
  if (!is_json_content_type(content_type)) {
    refuse(req, res,
           ErrorReply::from(
               Error(ErrorKind::unsupported_media_type, "unsupported_media_type",
                     "Content-Type must be application/json, got '" + content_type + "'")));
    return HandlerResponse::Handled;
  }
  std::string charset = content_type_charset(content_type);
  if (!charset.empty() && charset != "utf-8" && charset != "utf8") {
    refuse(
        req, res,
        ErrorReply::from(Error(ErrorKind::unsupported_media_type, "unsupported_charset",
                               "the request body must be UTF-8, got charset '" + charset + "'")));
    return HandlerResponse::Handled;
  }
  std::string encoding = req.get_header_value("Content-Encoding");
  if (!encoding.empty() && encoding != "identity") {
    refuse(req, res,
           ErrorReply::from(Error(ErrorKind::unsupported_media_type, "unsupported_content_encoding",
                                  "Content-Encoding '" + encoding +
                                      "' is not supported; send the JSON body uncompressed")));
    return HandlerResponse::Handled;
  }
  if (lengths.empty() && !req.has_header("Transfer-Encoding")) {
    refuse(
        req, res,
        ErrorReply{411, "invalid_request_error", "length_required",
                   "a decision request needs a Content-Length (or chunked Transfer-Encoding)", ""});
    res.set_header("Connection", "close");  // a body may follow that nobody can delimit
    return HandlerResponse::Handled;
  }
  auto length = parse_content_length(req.get_header_value("Content-Length"));
  if (length && *length > config_.max_body_bytes) {
    refuse(req, res,
           ErrorReply::from(Error(ErrorKind::payload_too_large, "request_too_large",
                                  "request body of " + std::to_string(*length) +
                                      " bytes is over the limit of " +
                                      std::to_string(config_.max_body_bytes) + " bytes")));
    return HandlerResponse::Handled;
  }
  return HandlerResponse::Unhandled;
}

void ServerCore::handle_health(const httplib::Request&, httplib::Response& res) {
  Health h = health();
  res.status = health_status(h);
  res.set_content(health_body(h), kJson);
}

void ServerCore::handle_models(const httplib::Request&, httplib::Response& res) {
  auto model = queue_.model();
  if (!model) {
    send(res, ErrorReply::from(
                  Error(ErrorKind::unavailable, "model_loading", "the model is not loaded")));
    return;
  }
  res.status = 200;
  res.set_content(models_body(*model), kJson);
}

void ServerCore::handle_metrics(const httplib::Request&, httplib::Response& res) {
  GaugeValues gauges;
  gauges.queue_depth = queue_.depth();
  gauges.in_flight = queue_.in_flight();
  auto model = queue_.model();
  gauges.model_loaded = model.has_value() && queue_.state() == QueueState::ready;
  gauges.model_load_seconds = model ? model->load_seconds : 0.0;
  res.status = 200;
  res.set_content(metrics_.render(gauges), "text/plain; version=0.0.4; charset=utf-8");
}

HandlerResponse ServerCore::on_error(const httplib::Request&, httplib::Response& res) {
  if (!res.body.empty()) return HandlerResponse::Unhandled;  // our own answer, keep it
  ConnectionState* connection = connections_.current();
  if (connection && connection->timed_out && res.status == 400) res.status = 408;
  send(res, ErrorReply::for_status(res.status));
  // httplib's own refusals (unparsable request line or headers, 408, 414, ...): where the next
  // request would start is unknown, so nothing more is read from this connection.
  res.set_header("Connection", "close");
  return HandlerResponse::Handled;
}

void ServerCore::on_exception(const httplib::Request&, httplib::Response& res,
                              std::exception_ptr error) {
  std::string id = current_id();
  std::string what = "unknown exception";
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  log_.event("error", "internal fault: " + what, id);
  send(res, ErrorReply::internal(id));
}

void ServerCore::post_route(const httplib::Request& req, httplib::Response& res) {
  if (res.get_header_value("Connection") == "close") {
    res.headers.erase("Keep-Alive");  // httplib adds it unless it closes on its own
    if (ConnectionState* connection = connections_.current()) connection->close = true;
  }
  RequestContext context = contexts_.take();
  if (context.id.empty()) context.id = res.get_header_value("X-Request-Id");
  if (context.id.empty()) context.id = ids_.next();
  if (!res.has_header("X-Request-Id")) res.set_header("X-Request-Id", context.id);

  metrics_.count_request(endpoint_label(find_endpoint(req.path)), res.status);
  AccessRecord record;
  record.request_id = context.id;
  record.method = req.method;
  record.path = req.path;
  record.status = res.status;
  record.input_tokens = context.input_tokens;
  record.queue_wait_ms = context.queue_wait_ms;
  record.decision_ms = context.decision_ms;
  record.total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - context.start)
          .count();
  log_.access(record);
}

}  // namespace clef::server
