#include "server/error_reply.hpp"

#include "json/render.hpp"
#include "json/value.hpp"

namespace clef::server {

const char* error_type(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::invalid_request:
    case ErrorKind::payload_too_large:
    case ErrorKind::unsupported_media_type:
    case ErrorKind::unprocessable:
      return "invalid_request_error";
    case ErrorKind::overloaded:
      return "overloaded_error";
    case ErrorKind::unavailable:
      return "unavailable_error";
    case ErrorKind::model_error:
    case ErrorKind::internal:
      return "server_error";
  }
  return "server_error";
}

ErrorReply ErrorReply::from(const Error& error) {
  ErrorReply reply{error.status(), error_type(error.kind()), error.code(), error.what(),
                   error.param()};
  // The record encoder refuses a schema that alone overflows the context as invalid_request
  // (400); the engine refuses text or images that overflow it as payload_too_large (413). Both
  // mean the request is too large for the served context: one status, 413.
  if (error.code() == "context_length_exceeded") {
    reply.status = 413;
    reply.type = error_type(ErrorKind::payload_too_large);
  }
  return reply;
}

namespace {

/// `text` with every byte outside printable ASCII as '?': a request's method and path are
/// client bytes, and the answer must stay valid UTF-8 JSON (a path of %ff%fe decodes to bytes
/// that are not UTF-8).
std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  return out;
}

}  // namespace

ErrorReply ErrorReply::not_found(const std::string& method, const std::string& path) {
  return {404, "not_found_error", "not_found",
          "no endpoint serves " + printable(method) + " " + printable(path) +
              " (endpoints: POST /v1/systemone, POST /v1/decisions, GET /v1/models, GET /health, "
              "GET /metrics, GET /openapi.json, GET / (the playground unless --no-playground))",
          ""};
}

ErrorReply ErrorReply::method_not_allowed(const std::string& method, const std::string& path,
                                          const std::string& allowed) {
  return {405, "invalid_request_error", "method_not_allowed",
          printable(path) + " does not accept " + printable(method) + "; use " + allowed, ""};
}

ErrorReply ErrorReply::for_status(int status) {
  switch (status) {
    case 400:
      return {400, "invalid_request_error", "invalid_request", "malformed HTTP request", ""};
    case 404:
      return {404, "not_found_error", "not_found", "not found", ""};
    case 408:
      return {408, "invalid_request_error", "request_timeout", "the request did not arrive in time",
              ""};
    case 413:
      return {413, "invalid_request_error", "request_too_large",
              "request body is larger than the server accepts (--max-body)", ""};
    case 414:
      return {414, "invalid_request_error", "uri_too_long", "request URI is too long", ""};
    case 431:
      return {431, "invalid_request_error", "headers_too_large",
              "the request's header fields are too large", ""};
    case 416:
      return {416, "invalid_request_error", "range_not_satisfiable", "range not satisfiable", ""};
    default:
      break;
  }
  if (status >= 500) return {status, "server_error", "internal_error", "internal server error", ""};
  return {status, "invalid_request_error", "invalid_request", "request refused", ""};
}

ErrorReply ErrorReply::busy(int status) {
  return {status, "overloaded_error", "server_busy",
          "every HTTP worker is busy; retry after the time Retry-After says", ""};
}

ErrorReply ErrorReply::internal(const std::string& request_id) {
  return {500, "server_error", "internal_error",
          "internal server error; the server log names request " + request_id, ""};
}

std::string ErrorReply::body() const {
  auto inner = json::Value::object({
      {"message", json::Value::string(message)},
      {"type", json::Value::string(type)},
      {"code", json::Value::string(code)},
      {"param", param.empty() ? json::Value::null() : json::Value::string(param)},
  });
  // `detail` repeats the message where FastAPI-style clients (TypeSafe's n8n node) read it.
  return json::dumps_unsorted(
      json::Value::object({{"error", std::move(inner)}, {"detail", json::Value::string(message)}}));
}

}  // namespace clef::server
