#include "server/request_ids.hpp"

#include <cstdio>
#include <random>

namespace clef::server {

RequestIds::RequestIds() {
  std::random_device device;
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%08x", static_cast<unsigned>(device()));
  prefix_ = std::string("req-") + buffer + "-";
}

std::string RequestIds::next() {
  return prefix_ + std::to_string(counter_.fetch_add(1, std::memory_order_relaxed) + 1);
}

namespace {

bool acceptable_client_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string RequestIds::for_request(std::string_view client_id) {
  return acceptable_client_id(client_id) ? std::string(client_id) : next();
}

}  // namespace clef::server
