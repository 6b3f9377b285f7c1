#include "server/routes.hpp"

#include "server/server_core.hpp"

namespace clef::server {

namespace {

constexpr Route kRoutes[] = {
    // endpoint, path, method, needs_key, light, get, label
    {Endpoint::systemone, "/v1/systemone", "POST", true, false, nullptr, "/v1/systemone"},
    {Endpoint::decisions, "/v1/decisions", "POST", true, false, nullptr, "/v1/decisions"},
    // Load balancers probe /health without a key.
    {Endpoint::health, "/health", "GET", false, true, &ServerCore::handle_health, "/health"},
    {Endpoint::models, "/v1/models", "GET", true, true, &ServerCore::handle_models, "/v1/models"},
    {Endpoint::metrics, "/metrics", "GET", true, true, &ServerCore::handle_metrics, "/metrics"},
    // The OpenAPI document and the playground, open like the API's description of itself.
    {Endpoint::web, "", "GET", false, false, nullptr, "web"},
    // Keys before routing: a client without one learns nothing about which paths exist.
    {Endpoint::unknown, "", "GET", true, false, nullptr, "other"},
};

}  // namespace

std::span<const Route> routes() noexcept {
  return kRoutes;
}

const Route& route_of(Endpoint endpoint) noexcept {
  for (const Route& r : kRoutes) {
    if (r.endpoint == endpoint) return r;
  }
  return kRoutes[std::size(kRoutes) - 1];
}

}  // namespace clef::server
