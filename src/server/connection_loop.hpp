#pragma once
// clef's connection loop for httplib 0.11: httplib::Server with its per-connection keep-alive
// loop replaced (it is the virtual process_and_close_socket; httplib still parses each request
// and calls clef's handlers through its protected process_request).
//
// Why: httplib 0.11's own loop
//   - keeps a connection open after a response that says "Connection: close", so a body refused
//     from its headers (never read) was parsed as the next request (request smuggling);
//   - has no deadline on a request's header phase (one header line every few seconds held a
//     worker thread forever: slowloris);
//   - waits for the kernel socket to become readable between requests, so pipelined requests
//     already sitting in its read buffer were dropped.
// This loop closes the connection after any response carrying "Connection: close" (ServerCore
// marks ConnectionState::close) without reading another request from it (lingering close: the
// rest is read and discarded, never parsed), gives each request's headers a total deadline
// (header_timeout_s) and its body one (body_timeout_s), and serves buffered pipelined requests in
// order.

#include <httplib.h>

#include <chrono>

#include "server/connection_state.hpp"

namespace clef::server {

/// Timeouts of one connection, seconds.
struct ConnectionLimits {
  int read_timeout_s = 10;       ///< one read() may wait this long
  int write_timeout_s = 10;      ///< one write() may wait this long
  int keep_alive_timeout_s = 5;  ///< idle time before the next request's first byte
  int header_timeout_s = 10;     ///< first byte of a request -> its headers complete
  int body_timeout_s = 30;       ///< headers complete -> body read (reads fail afterwards)
  int max_requests = 1000;       ///< requests on one connection, then it closes
  std::chrono::milliseconds linger{1000};  ///< most time spent discarding a refused body
};

class ConnectionServer : public httplib::Server {
 public:
  /// `connections` (not owned) gets each connection's state while it is served.
  ConnectionServer(Connections& connections, ConnectionLimits limits);

  /// Raises the listening socket's accept-queue length to `backlog` (call after binding).
  /// cpp-httplib 0.11.4 listens with a backlog of 5: a burst of connections while the accept
  /// thread is descheduled overflowed it, and clients got a connection that never answered.
  /// Returns false when not bound or listen() fails.
  bool set_listen_backlog(int backlog);

 private:
  bool process_and_close_socket(socket_t sock) override;

  Connections& connections_;
  ConnectionLimits limits_;
};

}  // namespace clef::server
