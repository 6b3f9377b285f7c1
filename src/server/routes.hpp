#pragma once
// The server's routes in one table: path, method, whether the API key is checked, whether the
// connection loop's light lane serves it, and its ServerCore handler. The router
// (http_server.cpp), the light lane, the key check, the 405's Allow header, the metrics labels
// and tests/server/routes_test.cpp (every route in web/openapi.json, every documented path a
// route) all read it: an endpoint is one row here and its handler.

#include <span>
#include <string_view>

#include "server/endpoints.hpp"
#include "server/http_exchange.hpp"

namespace clef::server {

class ServerCore;

/// One route.
struct Route {
  Endpoint endpoint;
  /// The exact path; "" for the embedded files (web_files.hpp: each at its own path) and for
  /// unknown paths.
  std::string_view path;
  /// "POST" (a decision: its body is read by ServerCore::handle_decision) or "GET" (HEAD too).
  std::string_view method;
  bool needs_key;  ///< with API keys configured, refused (401) without a valid one
  bool light;      ///< a GET the connection loop serves on its reserved lane
  /// The handler of a GET route with a path; null for the decisions and the embedded files
  /// (ServerCore::handle_web).
  HttpResponse (ServerCore::*get)() const;
  /// The metrics label: the path, "web" for the embedded files, "other" for unknown paths.
  std::string_view label;
};

/// Every route, unknown paths last.
std::span<const Route> routes() noexcept;

/// The route of `endpoint`.
const Route& route_of(Endpoint endpoint) noexcept;

}  // namespace clef::server
