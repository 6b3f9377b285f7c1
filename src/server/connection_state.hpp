#pragma once
// What the HTTP callbacks learn about the connection a request arrived on, kept per worker
// thread: httplib 0.11 serves each connection on one worker thread from accept to close and gives
// the callbacks no handle on it (see connection_loop.hpp, which owns the states).

#include <map>
#include <mutex>
#include <thread>

namespace clef::server {

/// One open connection, as seen between two requests. Touched only by the thread serving it.
struct ConnectionState {
  bool close = false;      ///< close after the current response (framing lost or body unread)
  bool timed_out = false;  ///< the header or body deadline passed while reading the request
};

/// The connection each worker thread is serving now. Thread-safe; a thread only touches its own
/// entry.
class Connections {
 public:
  /// Registers `state` as this thread's connection until the scope ends.
  class Scope {
   public:
    Scope(Connections& owner, ConnectionState& state);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Connections& owner_;
  };

  /// This thread's connection, or nullptr outside a connection (e.g. in a unit test).
  ConnectionState* current();

 private:
  std::mutex mutex_;
  std::map<std::thread::id, ConnectionState*> states_;
};

}  // namespace clef::server
