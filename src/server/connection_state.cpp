#include "server/connection_state.hpp"

namespace clef::server {

Connections::Scope::Scope(Connections& owner, ConnectionState& state) : owner_(owner) {
  std::lock_guard lock(owner_.mutex_);
  owner_.states_[std::this_thread::get_id()] = &state;
}

Connections::Scope::~Scope() {
  std::lock_guard lock(owner_.mutex_);
  owner_.states_.erase(std::this_thread::get_id());
}

ConnectionState* Connections::current() {
  std::lock_guard lock(mutex_);
  auto it = states_.find(std::this_thread::get_id());
  return it == states_.end() ? nullptr : it->second;
}

}  // namespace clef::server
