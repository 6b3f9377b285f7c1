#include "server/connection_loop.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace clef::server {

namespace {

using Clock = std::chrono::steady_clock;

/// Numeric address and port of a socket address ("" and -1 when it is not an IP address).
void numeric(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char host_buf[NI_MAXHOST];
  char port_buf[NI_MAXSERV];
  host.clear();
  port = -1;
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host_buf, sizeof host_buf,
                  port_buf, sizeof port_buf, NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    host = host_buf;
    port = std::atoi(port_buf);
  }
}

/// Waits up to `ms` for `events` on `fd`; true when they are there.
bool wait_for(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int n = 0;
  do {
    n = ::poll(&p, 1, std::max(ms, 0));
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

/// httplib::Stream over one accepted socket, with a read buffer that survives between requests
/// (pipelining) and an optional deadline on reads (header and body phases).
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, const ConnectionLimits& limits, ConnectionState& state)
      : fd_(fd), limits_(limits), state_(state) {}

  bool is_readable() const override {
    return buffered() > 0 || wait_for(fd_, POLLIN, read_wait_ms());
  }
  bool is_writable() const override {
    return wait_for(fd_, POLLOUT, limits_.write_timeout_s * 1000);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (buffered() == 0) {
      int wait = read_wait_ms();
      if (wait <= 0 || !wait_for(fd_, POLLIN, wait)) {
        if (deadline_ && Clock::now() >= *deadline_) state_.timed_out = true;
        return -1;
      }
      ssize_t n = 0;
      do {
        n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    std::size_t n = std::min(size, buffered());
    std::memcpy(ptr, buffer_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n = 0;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      numeric(addr, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      numeric(addr, len, ip, port);
  }
  socket_t socket() const override { return fd_; }

  std::size_t buffered() const { return end_ - begin_; }
  void set_deadline(std::optional<Clock::time_point> deadline) { deadline_ = deadline; }

 private:
  /// How long the next read may wait: the read timeout, cut at the deadline.
  int read_wait_ms() const {
    auto wait = std::chrono::milliseconds(limits_.read_timeout_s * 1000);
    if (deadline_) {
      wait = std::min(
          wait, std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - Clock::now()));
    }
    return static_cast<int>(wait.count());
  }

  int fd_;
  const ConnectionLimits& limits_;
  ConnectionState& state_;
  std::array<char, 4096> buffer_{};
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::optional<Clock::time_point> deadline_;
};

/// Discards what the peer still sends, until it closes or `linger` passes, so closing does not
/// reset the connection before the client has read our answer. Nothing read is parsed.
void linger_close(int fd, std::chrono::milliseconds linger) {
  ::shutdown(fd, SHUT_WR);
  auto until = Clock::now() + linger;
  std::array<char, 16384> sink{};
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0 || !wait_for(fd, POLLIN, static_cast<int>(left.count()))) break;
    if (::recv(fd, sink.data(), sink.size(), 0) <= 0) break;
  }
}

}  // namespace

ConnectionServer::ConnectionServer(Connections& connections, ConnectionLimits limits)
    : connections_(connections), limits_(limits) {}

bool ConnectionServer::set_listen_backlog(int backlog) {
  // listen() on a listening socket only updates its backlog (Linux, BSD).
  return svr_sock_ != INVALID_SOCKET && ::listen(svr_sock_, backlog) == 0;
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  ConnectionState state;
  Connections::Scope scope(connections_, state);
  ConnectionStream stream(sock, limits_, state);
  bool ok = true;
  for (int count = 0; count < limits_.max_requests; ++count) {
    // Idle wait for the next request (already buffered when pipelined), in short slices so a
    // stopping server is noticed. A new connection's first request gets the header deadline:
    // its client may be descheduled between connect() and send() on a busy machine, and the
    // keep-alive timeout (for idle connections between requests) closed such connections with
    // no answer.
    const int wait_s = count == 0 ? limits_.header_timeout_s : limits_.keep_alive_timeout_s;
    auto idle_until = Clock::now() + std::chrono::seconds(wait_s);
    bool ready = stream.buffered() > 0;
    while (!ready && svr_sock_ != INVALID_SOCKET && Clock::now() < idle_until) {
      ready = wait_for(sock, POLLIN, 50);
    }
    if (!ready || svr_sock_ == INVALID_SOCKET) break;

    state = ConnectionState{};
    stream.set_deadline(Clock::now() + std::chrono::seconds(limits_.header_timeout_s));
    bool connection_closed = false;
    bool last = count + 1 == limits_.max_requests;
    ok = process_request(stream, last, connection_closed, [&](httplib::Request&) {
      stream.set_deadline(Clock::now() + std::chrono::seconds(limits_.body_timeout_s));
    });
    stream.set_deadline(std::nullopt);
    if (!ok || connection_closed || state.close || state.timed_out) break;
  }
  if (state.close && !state.timed_out) linger_close(sock, limits_.linger);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace clef::server
