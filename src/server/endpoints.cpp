#include "server/endpoints.hpp"

#include "json/render.hpp"
#include "json/value.hpp"
#include "server/routes.hpp"
#include "server/web_files.hpp"

namespace clef::server {

Endpoint find_endpoint(std::string_view path) noexcept {
  for (const Route& r : routes()) {
    if (!r.path.empty() && r.path == path) return r.endpoint;
  }
  if (find_web_file(path) != nullptr) return Endpoint::web;
  return Endpoint::unknown;
}

const char* allowed_method(Endpoint endpoint) noexcept {
  return route_of(endpoint).method.data();  // a literal: NUL-terminated
}

bool method_allowed(Endpoint endpoint, std::string_view method) noexcept {
  std::string_view allowed = allowed_method(endpoint);
  return method == allowed || (allowed == "GET" && method == "HEAD");
}

const char* allowed_methods_header(Endpoint endpoint) noexcept {
  return route_of(endpoint).method == "GET" ? "GET, HEAD" : allowed_method(endpoint);
}

bool is_decision(Endpoint endpoint) noexcept {
  return route_of(endpoint).method == "POST";
}

bool is_light_request(std::string_view head) noexcept {
  std::string_view target;
  if (head.substr(0, 4) == "GET ") {
    target = head.substr(4);
  } else if (head.substr(0, 5) == "HEAD ") {
    target = head.substr(5);
  } else {
    return false;
  }
  const std::size_t end = target.find_first_of(" ?");
  if (end == std::string_view::npos) return false;  // not all here: the general lane serves it
  return route_of(find_endpoint(target.substr(0, end))).light;
}

const char* endpoint_label(Endpoint endpoint) noexcept {
  return route_of(endpoint).label.data();  // a literal: NUL-terminated
}

Health health_of(runtime::QueueState state, bool draining) noexcept {
  if (draining) return Health::draining;
  switch (state) {
    case runtime::QueueState::loading:
      return Health::loading;
    case runtime::QueueState::ready:
      return Health::ok;
    case runtime::QueueState::failed:
      return Health::failed;
    case runtime::QueueState::draining:
    case runtime::QueueState::stopped:
      return Health::draining;
  }
  return Health::failed;
}

int health_status(Health health) noexcept {
  return health == Health::ok ? 200 : 503;
}

std::string health_body(Health health) {
  const char* status = "failed";
  switch (health) {
    case Health::loading:
      status = "loading";
      break;
    case Health::ok:
      status = "ok";
      break;
    case Health::draining:
      status = "draining";
      break;
    case Health::failed:
      status = "failed";
      break;
  }
  return json::dumps_unsorted(json::Value::object({{"status", json::Value::string(status)}}));
}

std::string models_body(const runtime::ServedModel& model, bool random_weights) {
  auto entry = json::Value::object({
      {"id", json::Value::string(model.name)},
      {"object", json::Value::string("model")},
      {"owned_by", json::Value::string("clef")},
      {"context_size", json::Value::integer(std::int64_t{model.context_size})},
  });
  const runtime::ServedLimits& l = model.limits;
  if (l.max_questions > 0) {  // a model that states its limits
    const auto number = [](std::int64_t v) { return json::Value::integer(v); };
    entry.set(
        "limits",
        json::Value::object({
            {"max_questions", number(l.max_questions)},
            {"max_options", number(l.max_options)},
            {"max_images", number(l.max_images)},
            {"max_image_tokens", number(l.max_image_tokens)},
            {"max_request_image_tokens", number(l.max_request_image_tokens)},
            {"max_vision_memory_bytes", number(static_cast<std::int64_t>(l.max_vision_memory))},
            {"max_videos", number(l.max_videos)},
            {"max_video_frames", number(l.max_video_frames)},
            {"max_video_seconds", json::Value::floating(l.max_video_seconds)},
            {"max_video_frame_pixels", number(l.max_video_frame_pixels)},
            {"max_video_bytes", number(l.max_video_bytes)},
            {"parallel", number(l.parallel)},
        }));
    // What a client needs to plan where to send a request (issue 16).
    entry.set("capabilities",
              json::Value::object({{"images", json::Value::boolean(l.max_images > 0)},
                                   {"image_urls", json::Value::boolean(l.media_urls)},
                                   {"videos", json::Value::boolean(l.max_videos > 0)},
                                   {"video_files", json::Value::boolean(l.video_files)}}));
  }
  if (!model.placement.empty()) entry.set("device", json::Value::string(model.placement));
  // Which joint schema head answers: a published one, or the user's own (`clef tune`). Said when
  // the model says it (a loaded engine always does).
  if (!model.head.description.empty()) {
    const auto or_null = [](const std::string& v) {
      return v.empty() ? json::Value::null() : json::Value::string(v);
    };
    entry.set("head", json::Value::object(
                          {{"sha256", or_null(model.head.sha256)},
                           {"published", json::Value::boolean(!model.head.published.empty())},
                           {"published_as", or_null(model.head.published)},
                           {"tuned_from", or_null(model.head.tuned_from)},
                           {"description", json::Value::string(model.head.description)}}));
  }
  // Opt-in changes to the answers are said here; without them the answers are the reference's.
  entry.set("answers", json::Value::object(
                           {{"calibration", model.answers.calibration.empty()
                                                ? json::Value::null()
                                                : json::Value::string(model.answers.calibration)},
                            {"confidence", json::Value::string(model.answers.confidence)}}));
  // TypeSafe's SDKs and n8n node read `models: [{name, description, release_date}]` (their
  // ModelCard); the same model, beside the OpenAI list. clef does not know a release date: "".
  std::string description = "typed decisions served by clef";
  if (!model.placement.empty()) description += " (" + model.placement + ")";
  if (random_weights) {
    entry.set("random_weights", json::Value::boolean(true));
    description += "; --demo: random weights, the answers are meaningless";
  }
  auto card = json::Value::object({
      {"name", json::Value::string(model.name)},
      {"description", json::Value::string(description)},
      {"release_date", json::Value::string("")},
  });
  return json::dumps_unsorted(json::Value::object({
      {"object", json::Value::string("list")},
      {"data", json::Value::array({std::move(entry)})},
      {"models", json::Value::array({std::move(card)})},
  }));
}

}  // namespace clef::server
