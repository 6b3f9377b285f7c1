#pragma once
// Is the client of a queued request still there? httplib 0.11 does not expose a request's
// socket, so the probe finds it among this process's descriptors by its two endpoints and then
// asks the kernel whether the peer has closed it (Linux: poll with POLLRDHUP, no waiting).
//
// Safe only while the HTTP thread that owns the connection is still inside its handler (it is:
// that thread waits for the decision), so the descriptor cannot be closed and reused meanwhile.

#include <string>

namespace clef::server {

/// One TCP connection, as httplib's Request reports it (numeric addresses).
struct ConnectionEndpoints {
  std::string local_addr;
  int local_port = -1;
  std::string remote_addr;
  int remote_port = -1;
};

/// The descriptor of this process's connected socket with exactly these endpoints, or -1.
/// Scans /proc/self/fd (one getsockname + getpeername per socket descriptor).
int find_connection_socket(const ConnectionEndpoints& endpoints);

/// True when the peer of connected socket `fd` has closed or reset the connection (POLLRDHUP,
/// POLLHUP or POLLERR). A peer that only shut down its sending side also counts as gone.
bool peer_closed(int fd);

/// peer_closed(find_connection_socket(endpoints)); false when the socket cannot be found.
bool client_gone(const ConnectionEndpoints& endpoints);

}  // namespace clef::server
