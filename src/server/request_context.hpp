#pragma once
// Per-request facts gathered by the httplib callbacks (pre-routing, handler, post-routing) for the
// access log. httplib runs all of a request's callbacks on one worker thread and gives them no
// shared slot, so contexts are kept per thread id.

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace clef::server {

struct RequestContext {
  std::string id;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int input_tokens = -1;
  double queue_wait_ms = -1;
  double decision_ms = -1;
};

/// One RequestContext per worker thread. Thread-safe; a thread only touches its own entry.
class RequestContexts {
 public:
  /// Starts this thread's context (replacing a stale one) and returns it.
  RequestContext& begin(std::string id);
  /// This thread's context, or nullptr before begin().
  RequestContext* current();
  /// Removes and returns this thread's context; one with an empty id when there was none.
  RequestContext take();

 private:
  std::mutex mutex_;
  std::map<std::thread::id, RequestContext> contexts_;  // node-based: references stay valid
};

}  // namespace clef::server
