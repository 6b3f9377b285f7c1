#pragma once
// Bodies of the read-only endpoints: GET /health and GET /v1/models.

#include <string>

#include "server/decision_queue.hpp"

namespace clef::server {

/// What GET /health reports.
enum class Health {
  loading,   ///< 503 {"status":"loading"}: model loading or warming up
  ok,        ///< 200 {"status":"ok"}
  draining,  ///< 503 {"status":"draining"}: shutting down
  failed,    ///< 503 {"status":"failed"}: the model could not be loaded
};

/// Health from the queue's state; `draining` (the server began shutting down) wins.
Health health_of(QueueState state, bool draining) noexcept;

/// 200 for ok, else 503.
int health_status(Health health) noexcept;

/// {"status":"ok"|"loading"|"draining"|"failed"}
std::string health_body(Health health);

/// OpenAI-style model list with one entry:
/// {"object":"list","data":[{"id":name,"object":"model","owned_by":"clef","context_size":N}]}
std::string models_body(const ModelInfo& model);

}  // namespace clef::server
