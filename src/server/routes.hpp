#pragma once
// The server's endpoints: which paths exist and which method each accepts.

#include <string_view>

namespace clef::server {

enum class Endpoint { systemone, decisions, health, models, metrics, unknown };

/// The endpoint serving exactly `path` (no trailing-slash or case folding), or unknown.
Endpoint find_endpoint(std::string_view path) noexcept;

/// "POST" for the decision endpoints, "GET" for the others.
const char* allowed_method(Endpoint endpoint) noexcept;

/// True when `method` may be used on `endpoint` (HEAD is accepted wherever GET is).
bool method_allowed(Endpoint endpoint, std::string_view method) noexcept;

/// The metrics label of an endpoint: its path, or "other" for unknown paths (bounded labels).
const char* endpoint_label(Endpoint endpoint) noexcept;

}  // namespace clef::server
