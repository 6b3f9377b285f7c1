#include "server/server_core.hpp"

#include <algorithm>
#include <cmath>

#include "server/routes.hpp"
#include "server/web_files.hpp"
#include "transport/connection.hpp"

#include "util/error.hpp"

namespace clef::server {

namespace {

/// True unless the request surely has no body: any Transfer-Encoding, or a Content-Length other
/// than a plain 0 (an unparsable one included).
bool has_unread_body(const HttpRequest& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  if (!req.has_header("Content-Length")) return false;
  auto length = parse_content_length(req.header("Content-Length"));
  return !length || *length > 0;
}

}  // namespace

ServerCore::ServerCore(ServerConfig config, runtime::DecisionQueue::Factory factory,
                       std::ostream& log_stream)
    : config_(std::move(config)),
      log_(log_stream, config_.log_format),
      keys_(config_.api_keys, config_.api_key_file),
      prepare_memory_(config_.prepare_memory_bytes, config_.prepare_memory_per_request_bytes),
      queue_(std::move(factory), config_.queue_size, runtime::warmup_request()) {
  if (keys_.enabled()) {
    log_.event("info", "API keys required (every endpoint but /health and the web files): " +
                           keys_.names());
  }
}

HttpResponse ServerCore::answer(const ErrorReply& reply) const {
  HttpResponse res;
  res.status = reply.status;
  res.body = reply.body();
  if (reply.status == 429 || reply.status == 503) {
    res.set_header("Retry-After", std::to_string(config_.retry_after_s));
    // TypeSafe's SDKs prefer retry-after-ms: for a full queue, when the runtime thread will next
    // take a waiting request (the recent decisions' pace); otherwise Retry-After in ms.
    std::optional<double> wait = reply.code == "queue_full" ? queue_.slot_wait_ms() : std::nullopt;
    const long ms = wait ? std::max(1L, std::lround(*wait)) : 1000L * config_.retry_after_s;
    res.set_header("retry-after-ms", std::to_string(ms));
  }
  return res;
}

HttpResponse ServerCore::refuse(const HttpRequest& req, const ErrorReply& reply) const {
  HttpResponse res = answer(reply);
  if (has_unread_body(req)) res.set_header("Connection", "close");
  return res;
}

RequestState ServerCore::begin(std::string_view client_id, std::string_view path) {
  RequestState state;
  state.id = ids_.for_request(client_id);
  state.endpoint = find_endpoint(path);
  return state;
}

std::optional<HttpResponse> ServerCore::pre_route(const HttpRequest& req, RequestState& state) {
  // Framing first, for every path: a request whose body length is unclear is refused and its
  // connection closed, so nothing after it is taken for a request.
  const std::vector<std::string> lengths = req.header_values("Content-Length");
  // Several Transfer-Encoding lines are one comma-separated list (RFC 9110 section 5.3):
  // "chunked" twice, or "chunked" then "identity", is not plain chunked.
  std::string codings;
  for (const std::string& value : req.header_values("Transfer-Encoding")) {
    codings += (codings.empty() ? "" : ", ") + value;
  }
  if (std::string problem = framing_problem(lengths, codings); !problem.empty()) {
    HttpResponse res = answer(ErrorReply::from(invalid_request(problem)));
    res.set_header("Connection", "close");
    return res;
  }

  const Endpoint endpoint = state.endpoint;
  // Keys before routing: a client without one learns nothing about which paths exist.
  if (keys_.enabled() && route_of(endpoint).needs_key) {
    const PresentedKey presented =
        presented_key(req.header_values("Authorization"), req.header_values("X-API-Key"));
    if (presented.status == 400) {
      return refuse(req, ErrorReply::from(invalid_request(presented.problem, "Authorization")));
    }
    if (presented.status == 401) {
      HttpResponse res = refuse(
          req, ErrorReply{401, "authentication_error", "invalid_api_key", presented.problem, ""});
      res.set_header("WWW-Authenticate", "Bearer realm=\"clef\"");
      return res;
    }
    std::optional<std::string> name = keys_.match(presented.key);
    if (!name) {
      const bool missing = presented.key.empty();
      HttpResponse res = refuse(
          req,
          ErrorReply{401, "authentication_error", missing ? "missing_api_key" : "invalid_api_key",
                     missing ? "this server needs an API key: send Authorization: Bearer KEY "
                               "(or X-API-Key: KEY)"
                             : "the API key is not one this server accepts",
                     ""});
      // RFC 6750 section 3: the scheme, and for a key that was sent, why it was refused.
      res.set_header("WWW-Authenticate", missing
                                             ? "Bearer realm=\"clef\""
                                             : "Bearer realm=\"clef\", error=\"invalid_token\"");
      return res;
    }
    state.key_name = std::move(*name);
  }
  if (endpoint == Endpoint::unknown)
    return refuse(req, ErrorReply::not_found(req.method, req.path));
  if (!method_allowed(endpoint, req.method)) {
    HttpResponse res =
        refuse(req, ErrorReply::method_not_allowed(req.method, req.path, allowed_method(endpoint)));
    res.set_header("Allow", allowed_methods_header(endpoint));
    return res;
  }
  if (!is_decision(endpoint)) return std::nullopt;

  // A decision request: everything that can be refused from the headers is refused here,
  // before its body is read.
  if (draining())
    return refuse(req, ErrorReply::from(runtime::unavailable_error(runtime::QueueState::draining)));
  if (const runtime::QueueState state = queue_.state(); state != runtime::QueueState::ready) {
    return refuse(req, ErrorReply::from(runtime::unavailable_error(state)));
  }
  const std::string content_type = req.header("Content-Type");
  if (!is_json_content_type(content_type)) {
    return refuse(req, ErrorReply::from(Error(
                           ErrorKind::unsupported_media_type, "unsupported_media_type",
                           "Content-Type must be application/json, got '" + content_type + "'")));
  }
  const std::string charset = content_type_charset(content_type);
  if (!charset.empty() && charset != "utf-8" && charset != "utf8") {
    return refuse(req, ErrorReply::from(
                           Error(ErrorKind::unsupported_media_type, "unsupported_charset",
                                 "the request body must be UTF-8, got charset '" + charset + "'")));
  }
  const std::string encoding = req.header("Content-Encoding");
  if (!encoding.empty() && encoding != "identity") {
    return refuse(req, ErrorReply::from(
                           Error(ErrorKind::unsupported_media_type, "unsupported_content_encoding",
                                 "Content-Encoding '" + encoding +
                                     "' is not supported; send the JSON body uncompressed")));
  }
  if (lengths.empty() && !req.has_header("Transfer-Encoding")) {
    HttpResponse res = refuse(
        req,
        ErrorReply{411, "invalid_request_error", "length_required",
                   "a decision request needs a Content-Length (or chunked Transfer-Encoding)", ""});
    res.set_header("Connection", "close");  // a body may follow that nobody can delimit
    return res;
  }
  auto length = parse_content_length(req.header("Content-Length"));
  if (length && *length > config_.max_body_bytes) {
    return refuse(
        req, ErrorReply::from(Error(
                 ErrorKind::payload_too_large, "request_too_large",
                 "request body of " + std::to_string(*length) + " bytes is over the limit of " +
                     std::to_string(config_.max_body_bytes) + " bytes (--max-body)")));
  }
  return std::nullopt;
}

HttpResponse ServerCore::handle_health() const {
  Health h = health();
  HttpResponse res;
  res.status = health_status(h);
  res.body = health_body(h);
  return res;
}

HttpResponse ServerCore::handle_models() const {
  auto model = queue_.served();
  if (!model) {
    return answer(ErrorReply::from(
        Error(ErrorKind::unavailable, "model_loading", "the model is not loaded")));
  }
  HttpResponse res;
  res.body = models_body(*model, config_.random_weights);
  return res;
}

HttpResponse ServerCore::handle_metrics() const {
  GaugeValues gauges;
  gauges.queue_depth = queue_.depth();
  gauges.in_flight = queue_.in_flight();
  auto model = queue_.served();
  gauges.model_loaded = model.has_value() && queue_.state() == runtime::QueueState::ready;
  gauges.model_load_seconds = model ? model->load_seconds : 0.0;
  gauges.state_cache = queue_.state_cache_stats();
  HttpResponse res;
  res.body = metrics_.render(gauges);
  res.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return res;
}

HttpResponse ServerCore::handle_web(std::string_view path) const {
  const WebFile* file = find_web_file(path);
  if (file == nullptr || (file->playground && !config_.playground)) {
    return answer(ErrorReply::not_found("GET", std::string(path)));
  }
  HttpResponse res;
  res.body = std::string(file->body);
  res.content_type = std::string(file->content_type);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (file->playground) {
    // The page talks only to this server; no inline script, no other origin.
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                   "script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
  }
  return res;
}

HttpResponse ServerCore::library_refusal(int status) const {
  // Where the next request would start is unknown, so nothing more is read from this connection.
  HttpResponse res = answer(ErrorReply::for_status(status));
  res.set_header("Connection", "close");
  return res;
}

HttpResponse ServerCore::internal_fault(const RequestState& state, std::exception_ptr error) {
  std::string what = "unknown exception";
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  log_.event("error", "internal fault: " + what, state.id);
  return answer(ErrorReply::internal(state.id));
}

void ServerCore::finish(std::string_view method, std::string_view path, const RequestState& state,
                        int status) {
  metrics_.count_request(endpoint_label(state.endpoint), status, state.key_name);
  long quiet = -1;  // probes not logged before this one (-1: not a probe, or all are logged)
  const bool probe = state.endpoint == Endpoint::health && (method == "GET" || method == "HEAD");
  if (probe && !config_.log_all_probes) {
    // A balancer probes each replica several times a second: a line only when the answer changes.
    std::lock_guard lock(probes_mutex_);
    if (status == last_probe_status_) {
      ++quiet_probes_;
      return;
    }
    last_probe_status_ = status;
    quiet = quiet_probes_;
    quiet_probes_ = 0;
  }
  AccessRecord record;
  record.request_id = state.id;
  record.method = method;
  record.path = path;
  record.status = status;
  record.input_tokens = state.input_tokens;
  record.cached_tokens = state.cached_tokens;
  record.queue_wait_ms = state.queue_wait_ms;
  record.decision_ms = state.decision_ms;
  record.key_name = state.key_name;
  record.truncated_tokens = state.truncated_tokens;
  record.ignored_fields = state.ignored_fields;
  record.quiet_probes = quiet;
  record.total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - state.start)
          .count();
  log_.access(record);
}

void ServerCore::reload_api_keys() {
  if (keys_.file().empty()) {
    log_.event("info", "SIGHUP: nothing to re-read (no --api-key-file); serving on");
    return;
  }
  if (std::string problem = keys_.reload(); !problem.empty()) {
    log_.event("error", "SIGHUP: the API keys stay as they were: " + problem);
    return;
  }
  log_.event("info",
             "SIGHUP: re-read " + keys_.file() + "; API keys accepted now: " + keys_.names());
}

HttpResponse ServerCore::early_reply(int status, std::string_view head) {
  RequestState state;
  state.id = ids_.next();
  // "METHOD TARGET HTTP/1.1\r\n": method and path for the log, "-" when not all here.
  std::string_view method = "-", path = "-";
  const std::size_t line_end = head.find("\r\n");
  if (line_end != std::string_view::npos && line_end <= 8192) {
    const std::string_view line = head.substr(0, line_end);
    const std::size_t space = line.find(' ');
    if (space != 0) method = line.substr(0, space);  // also a line with no target or version
    if (space != std::string_view::npos) {
      const std::string_view rest = line.substr(space + 1);
      path = rest.substr(0, rest.find(' '));
      path = path.substr(0, path.find('?'));
      if (path.empty()) path = "-";
      state.endpoint = find_endpoint(path);
    }
  }
  HttpResponse res;
  if (status == 429) {  // every worker busy: the server is overloaded
    res = answer(ErrorReply::busy(config_.overload_status));
    res.set_header("Connection", "close");
  } else if (status == transport::kPlainHttpOnTls) {
    res = answer(ErrorReply{400, "invalid_request_error", "https_required",
                            "this port speaks HTTPS (TLS) and the request came as plain HTTP: "
                            "use https:// (with a self-signed certificate, curl --cacert FILE)",
                            ""});
    res.set_header("Connection", "close");
  } else if (status == 501) {
    // The method as sent, up to 64 bytes (it is the client's text, echoed).
    const std::string named = method.size() > 64 ? std::string(method.substr(0, 64)) + "... (" +
                                                       std::to_string(method.size()) + " bytes)"
                                                 : std::string(method);
    res = answer(ErrorReply{
        501, "invalid_request_error", "method_not_implemented",
        "the method " + named + " is not implemented (clef's routes take GET and POST)", ""});
    res.set_header("Connection", "close");
  } else if (status == 413) {
    // The connection loop read a declared length, or chunks, over the limit: say which limit.
    res = answer(ErrorReply::from(Error(ErrorKind::payload_too_large, "request_too_large",
                                        "request body is over the limit of " +
                                            std::to_string(config_.max_body_bytes) +
                                            " bytes (--max-body)")));
    res.set_header("Connection", "close");
  } else {
    res = library_refusal(status);
  }
  finish(method, path, state, res.status);
  for (std::string_view name : kRequestIdHeaders) res.set_header(std::string(name), state.id);
  return res;
}

}  // namespace clef::server
