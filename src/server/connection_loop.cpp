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

void peer_address(int fd, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) numeric(addr, len, ip, port);
}

void local_address(int fd, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) numeric(addr, len, ip, port);
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

/// True when `head` (a response's status line and headers) has a Connection header with the
/// token "close" (httplib writes each header as "Name: value\r\n").
bool says_close(std::string_view head) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (auto at = lower.find("\r\nconnection:"); at != std::string::npos;
       at = lower.find("\r\nconnection:", at + 1)) {
    auto end = lower.find("\r\n", at + 2);
    if (lower.substr(at, end - at).find("close") != std::string::npos) return true;
  }
  return false;
}

/// httplib::Stream over one accepted socket (through its TLS session under HTTPS), with a read
/// buffer that lives as long as the connection (pipelining), an optional deadline on reads (header
/// and body phases), and a look at each response's head as it is written (does it close the
/// connection?).
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, const ConnectionLimits& limits, TlsSession* tls)
      : fd_(fd), limits_(limits), tls_(tls) {}

  bool is_readable() const override { return buffered() > 0 || tls_pending(); }
  bool wait_readable() const override {
    return buffered() > 0 || tls_pending() || wait_for(fd_, POLLIN, read_wait_ms());
  }
  bool wait_writable() const override {
    return wait_for(fd_, POLLOUT, limits_.write_timeout_s * 1000);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (buffered() == 0) {
      ssize_t n = fill();
      if (n <= 0) return n == 0 ? 0 : -1;  // 0: the peer closed
    }
    std::size_t n = std::min(size, buffered());
    std::memcpy(ptr, buffer_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (watching_head_) watch_head(ptr, size);
    if (!wait_writable()) return -1;
    if (tls_ != nullptr) return tls_->write(ptr, size);
    ssize_t n = 0;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    peer_address(fd_, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    local_address(fd_, ip, port);
  }
  socket_t socket() const override { return fd_; }
  time_t duration() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count();
  }
  const char* buffered_data(size_t& size) const override {
    size = buffered();
    return size ? buffer_.data() + begin_ : nullptr;
  }
  void consume_buffered(size_t size) override { begin_ += std::min(size, buffered()); }

  std::size_t buffered() const { return buffer_.size() - begin_; }
  /// True when the TLS session holds decrypted bytes the socket no longer shows.
  bool tls_pending() const { return tls_ != nullptr && tls_->pending() > 0; }
  void set_deadline(std::optional<Clock::time_point> deadline) { deadline_ = deadline; }

  /// Reads until the buffered request's header block is complete ("\r\n\r\n") or the peer
  /// closes or fails (httplib sees that): 0. Else the status to refuse it with: 408 when the
  /// deadline passed first, 414 / 431 when the request line / the header block or a header line
  /// is over the limits.
  int fill_headers(const ConnectionLimits& limits) {
    while (true) {
      const std::string_view pending(buffer_.data() + begin_, buffered());
      const std::size_t line_end = pending.find("\r\n");
      const std::size_t end = pending.find("\r\n\r\n");
      if (std::min(line_end, pending.size()) > limits.max_request_line) return 414;
      const std::string_view block = pending.substr(0, std::min(end, pending.size()));
      std::size_t fields = 0;
      for (std::size_t at = line_end; at != std::string_view::npos && at < block.size();) {
        const std::size_t next = block.find("\r\n", at + 2);
        if (std::min(next, block.size()) - (at + 2) > limits.max_header_line) return 431;
        if (++fields > limits.max_header_count) return 431;
        at = next;
      }
      if (end != std::string_view::npos) return 0;
      if (pending.size() >= limits.max_header_bytes) return 431;
      ssize_t n = fill();
      if (n == kWaitedInVain) {
        if (timed_out()) return 408;
        continue;  // a read timeout before the deadline
      }
      if (n <= 0) return 0;  // peer closed or a socket error: httplib sees it
    }
  }

  bool timed_out() const { return deadline_ && Clock::now() >= *deadline_; }

  /// Starts watching the next response's head; response_closes() tells what it said.
  void begin_response() {
    watching_head_ = true;
    head_.clear();
    closes_ = false;
  }
  bool response_closes() const { return closes_; }

 private:
  static constexpr ssize_t kWaitedInVain = -2;

  /// Appends what one recv() brings to the buffer; its result (0: peer closed, -1: error,
  /// kWaitedInVain: nothing arrived within the read timeout or before the deadline).
  ssize_t fill() {
    int wait = read_wait_ms();
    if (!tls_pending() && (wait <= 0 || !wait_for(fd_, POLLIN, wait))) return kWaitedInVain;
    if (begin_ > 0 && begin_ == buffer_.size()) {
      buffer_.clear();
      begin_ = 0;
    } else if (begin_ > 65536) {
      buffer_.erase(0, begin_);
      begin_ = 0;
    }
    std::array<char, 16384> chunk{};
    ssize_t n = 0;
    if (tls_ != nullptr) {
      n = tls_->read(chunk.data(), chunk.size());
    } else {
      do {
        n = ::recv(fd_, chunk.data(), chunk.size(), 0);
      } while (n < 0 && errno == EINTR);
    }
    if (n > 0) buffer_.append(chunk.data(), static_cast<std::size_t>(n));
    return n;
  }

  void watch_head(const char* ptr, std::size_t size) {
    head_.append(ptr, std::min<std::size_t>(size, 65536));
    auto end = head_.find("\r\n\r\n");
    if (end == std::string::npos && head_.size() < 65536) return;
    if (head_.compare(0, 10, "HTTP/1.1 1") == 0 && end != std::string::npos) {
      head_.erase(0, end + 4);  // an interim answer (100 Continue): the final one follows
      if (!head_.empty()) watch_head("", 0);
      return;
    }
    closes_ = says_close(std::string_view(head_).substr(0, end));
    watching_head_ = false;
    head_.clear();
  }

  /// How long the next read may wait: the read timeout, cut at the deadline.
  int read_wait_ms() const {
    auto wait = std::chrono::milliseconds(limits_.read_timeout_s * 1000);
    if (deadline_) {
      // Rounded up: a wait cut short by rounding would end a read before its deadline.
      wait =
          std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(*deadline_ - Clock::now()));
    }
    return static_cast<int>(wait.count());
  }

  int fd_;
  const ConnectionLimits& limits_;
  TlsSession* tls_;  ///< not owned; nullptr for plain HTTP
  Clock::time_point started_ = Clock::now();
  std::string buffer_;
  std::size_t begin_ = 0;
  std::optional<Clock::time_point> deadline_;
  bool watching_head_ = false;
  std::string head_;
  bool closes_ = false;
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

ConnectionServer::ConnectionServer(ConnectionLimits limits, EarlyReply early_reply,
                                   std::shared_ptr<const TlsContext> tls)
    : limits_(limits), early_reply_(std::move(early_reply)), tls_(std::move(tls)) {}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  std::unique_ptr<TlsSession> session;
  if (tls_) {
    session = tls_->accept(sock, std::chrono::seconds(limits_.header_timeout_s));
    if (!session) {  // not TLS, too slow, or the client refused the certificate: nothing to say
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
      return false;
    }
  }
  ConnectionStream stream(sock, limits_, session.get());
  std::string remote_addr, local_addr;
  int remote_port = -1, local_port = -1;
  peer_address(sock, remote_addr, remote_port);
  local_address(sock, local_addr, local_port);
  bool ok = true;
  bool close_lingering = false;
  for (int count = 0; count < limits_.max_requests; ++count) {
    // Idle wait for the next request (already buffered when pipelined), in short slices so a
    // stopping server is noticed.
    const int wait_s = count == 0 ? limits_.header_timeout_s : limits_.keep_alive_timeout_s;
    auto idle_until = Clock::now() + std::chrono::seconds(wait_s);
    bool ready = stream.buffered() > 0 || stream.tls_pending();
    while (!ready && svr_sock_ != INVALID_SOCKET && Clock::now() < idle_until) {
      ready = wait_for(sock, POLLIN, 50);
    }
    if (!ready || svr_sock_ == INVALID_SOCKET) break;

    // The header deadline: the whole header block must be here before httplib parses it.
    stream.set_deadline(Clock::now() + std::chrono::seconds(limits_.header_timeout_s));
    if (const int refused = stream.fill_headers(limits_); refused != 0) {
      std::string reply = early_reply_ ? early_reply_(refused) : std::string();
      if (!reply.empty()) stream.write(reply.data(), reply.size());
      ok = false;
      close_lingering = refused != 408;  // the rest of an oversized request is discarded
      break;
    }
    bool connection_closed = false;
    bool last = count + 1 == limits_.max_requests;
    stream.begin_response();
    ok = serve_guarded([&] {
      return process_request(
          stream, remote_addr, remote_port, local_addr, local_port, last, connection_closed,
          [&](httplib::Request&) {
            stream.set_deadline(Clock::now() + std::chrono::seconds(limits_.body_timeout_s));
          });
    });
    stream.set_deadline(std::nullopt);
    if (stream.response_closes()) close_lingering = true;
    if (!ok || connection_closed || close_lingering) break;
  }
  if (session) session->close_notify();
  if (close_lingering) linger_close(sock, limits_.linger);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace clef::server
