#include "server/request_context.hpp"

namespace clef::server {

RequestContext& RequestContexts::begin(std::string id) {
  std::lock_guard lock(mutex_);
  RequestContext& context = contexts_[std::this_thread::get_id()];
  context = RequestContext{};
  context.id = std::move(id);
  return context;
}

RequestContext* RequestContexts::current() {
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(std::this_thread::get_id());
  return it == contexts_.end() ? nullptr : &it->second;
}

RequestContext RequestContexts::take() {
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(std::this_thread::get_id());
  if (it == contexts_.end()) return RequestContext{};
  RequestContext context = std::move(it->second);
  contexts_.erase(it);
  return context;
}

}  // namespace clef::server
