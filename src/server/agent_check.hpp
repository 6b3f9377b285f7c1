#pragma once
// HAProxy's agent check (haproxy.org configuration manual, "agent-check"): a TCP port on which the
// server answers each connection with one line saying how much it can take and then closes, so
// HAProxy weighs replicas by free capacity instead of round-robin. clef serve --agent-port.

#include <functional>
#include <string>
#include <thread>

#include "server/endpoints.hpp"

namespace clef::server {

/// The agent's reply (without the newline) for a server in `health` with `waiting` requests
/// queued, `running` decided now, room for `capacity` waiting:
///   ok:       "up ready N%", N = 100 * (1 - (waiting + running) / (capacity + 1)), at least 1
///   loading:  "maint"  (no traffic until ready; "ready" brings it back)
///   draining: "drain"  (finish what it has, take nothing new)
///   failed:   "down"
std::string agent_reply(Health health, std::size_t waiting, int running, std::size_t capacity);

/// A listening socket answered by one thread: each connection gets reply() + "\n" and is closed.
/// RAII: the destructor stops the thread and closes the socket.
class AgentCheck {
 public:
  /// Binds host:port (0: any free port). Throws clef::Error (invalid_request, "bind_failed",
  /// param "agent_port").
  AgentCheck(const std::string& host, int port, std::function<std::string()> reply);
  ~AgentCheck();
  AgentCheck(const AgentCheck&) = delete;
  AgentCheck& operator=(const AgentCheck&) = delete;

  int port() const noexcept { return port_; }

 private:
  void run();

  int fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};  ///< a pipe that wakes the thread to stop
  std::function<std::string()> reply_;
  std::thread thread_;
};

}  // namespace clef::server
