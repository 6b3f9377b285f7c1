#include "server/warmup_request.hpp"

namespace clef::server {

json::Value warmup_request() {
  auto question = json::Value::object({{"type", json::Value::string("noul")}});
  return json::Value::object({
      {"state", json::Value::string("warm-up")},
      {"questions", json::Value::object({{"ready", std::move(question)}})},
  });
}

}  // namespace clef::server
