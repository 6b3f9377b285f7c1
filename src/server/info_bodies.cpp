#include "server/info_bodies.hpp"

#include "json/render.hpp"
#include "json/value.hpp"

namespace clef::server {

Health health_of(QueueState state, bool draining) noexcept {
  if (draining) return Health::draining;
  switch (state) {
    case QueueState::loading:
      return Health::loading;
    case QueueState::ready:
      return Health::ok;
    case QueueState::failed:
      return Health::failed;
    case QueueState::draining:
    case QueueState::stopped:
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

std::string models_body(const ModelInfo& model) {
  auto entry = json::Value::object({
      {"id", json::Value::string(model.name)},
      {"object", json::Value::string("model")},
      {"owned_by", json::Value::string("clef")},
      {"context_size", json::Value::integer(std::int64_t{model.context_size})},
  });
  return json::dumps_unsorted(json::Value::object({
      {"object", json::Value::string("list")},
      {"data", json::Value::array({std::move(entry)})},
  }));
}

}  // namespace clef::server
