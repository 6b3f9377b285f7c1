#include "server/routes.hpp"

namespace clef::server {

Endpoint find_endpoint(std::string_view path) noexcept {
  if (path == "/v1/systemone") return Endpoint::systemone;
  if (path == "/v1/decisions") return Endpoint::decisions;
  if (path == "/health") return Endpoint::health;
  if (path == "/v1/models") return Endpoint::models;
  if (path == "/metrics") return Endpoint::metrics;
  return Endpoint::unknown;
}

const char* allowed_method(Endpoint endpoint) noexcept {
  return endpoint == Endpoint::systemone || endpoint == Endpoint::decisions ? "POST" : "GET";
}

bool method_allowed(Endpoint endpoint, std::string_view method) noexcept {
  std::string_view allowed = allowed_method(endpoint);
  return method == allowed || (allowed == "GET" && method == "HEAD");
}

const char* endpoint_label(Endpoint endpoint) noexcept {
  switch (endpoint) {
    case Endpoint::systemone:
      return "/v1/systemone";
    case Endpoint::decisions:
      return "/v1/decisions";
    case Endpoint::health:
      return "/health";
    case Endpoint::models:
      return "/v1/models";
    case Endpoint::metrics:
      return "/metrics";
    case Endpoint::unknown:
      return "other";
  }
  return "other";
}

}  // namespace clef::server
