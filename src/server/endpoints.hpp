#pragma once
// The endpoints clef serves: which paths exist, which method each accepts, and the bodies of the
// read-only ones (GET /health, GET /v1/models).

#include <string>
#include <string_view>

#include "runtime/loop/decision_queue.hpp"

namespace clef::server {
enum class Endpoint { systemone, decisions, health, models, metrics, web, unknown };

/// The endpoint serving exactly `path` (no trailing-slash or case folding), or unknown; `web` for
/// the embedded files (web_files.hpp: /openapi.json, the playground).
Endpoint find_endpoint(std::string_view path) noexcept;

/// The route's method (routes.hpp): "POST" for the decision endpoints, "GET" for the others.
const char* allowed_method(Endpoint endpoint) noexcept;

/// True when `method` may be used on `endpoint` (HEAD is accepted wherever GET is).
bool method_allowed(Endpoint endpoint, std::string_view method) noexcept;

/// The Allow header of a 405 on `endpoint`: "POST", or "GET, HEAD".
const char* allowed_methods_header(Endpoint endpoint) noexcept;

/// True for the decision endpoints (POST: a SystemOne request in the body).
bool is_decision(Endpoint endpoint) noexcept;

/// True when a request starting with `head` (its first bytes: "GET /health HTTP/1.1...") is a
/// light one the connection loop serves on its reserved lane: GET or HEAD of /health, /metrics or
/// /v1/models (a query string allowed). False when the target has not fully arrived in `head`.
bool is_light_request(std::string_view head) noexcept;

/// The metrics label of an endpoint: its path, or "other" for unknown paths (bounded labels).
const char* endpoint_label(Endpoint endpoint) noexcept;

/// What GET /health reports.
enum class Health {
  loading,   ///< 503 {"status":"loading"}: model loading or warming up
  ok,        ///< 200 {"status":"ok"}
  draining,  ///< 503 {"status":"draining"}: shutting down
  failed,    ///< 503 {"status":"failed"}: the model could not be loaded
};

/// Health from the queue's state; `draining` (the server began shutting down) wins.
Health health_of(runtime::QueueState state, bool draining) noexcept;

/// 200 for ok, else 503.
int health_status(Health health) noexcept;

/// {"status":"ok"|"loading"|"draining"|"failed"}
std::string health_body(Health health);

/// OpenAI-style model list with one entry, then the same model as TypeSafe's SDKs read it:
/// {"object":"list","data":[{"id":name,"object":"model","owned_by":"clef","context_size":N,
///  "limits":{"max_questions","max_options","max_images","max_image_tokens",
///  "max_request_image_tokens","max_vision_memory_bytes"}, "capabilities":{"images","image_urls",
///  "videos","video_files"}, "device", "answers":{"calibration","confidence"}}],
///  "models":[{"name":name,"description","release_date":""}]} ("limits", "capabilities" only
/// when the model states them; 0 means no limit beyond the context, max_images 0: no images
/// without an mmproj). `random_weights` (clef serve --demo): the entry carries
/// "random_weights": true and both descriptions say the answers are meaningless.
std::string models_body(const runtime::ServedModel& model, bool random_weights = false);

}  // namespace clef::server
