#include "transport/connection.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "transport/header_values.hpp"

namespace clef::transport {

namespace {

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

/// The first bytes of a request a LightRequest is shown ("HEAD /v1/models/" and a little).
constexpr std::size_t kLookBytes = 64;

}  // namespace

// ---------------------------------------------------------------------------------------------
// ConnectionStream

ConnectionStream::ConnectionStream(int fd, const ConnectionLimits& limits, TlsSession* tls)
    : fd_(fd), limits_(limits), tls_(tls) {}

bool ConnectionStream::is_readable() const {
  return buffered() > 0 || tls_pending();
}

bool ConnectionStream::wait_readable() const {
  return buffered() > 0 || tls_pending() || wait_for(fd_, POLLIN, read_wait_ms());
}

bool ConnectionStream::wait_writable() const {
  return wait_for(fd_, POLLOUT, limits_.timeouts.write_s * 1000);
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (buffered() == 0) {
    ssize_t n = fill();
    if (n <= 0) return n == 0 ? 0 : -1;  // 0: the peer closed
  }
  std::size_t n = std::min(size, buffered());
  std::memcpy(ptr, buffer_.data() + begin_, n);
  begin_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (watching_head_) watch_head(ptr, size);
  if (tls_ != nullptr) return tls_->write(ptr, size, limits_.timeouts.write_s * 1000);
  if (!wait_writable()) return -1;
  ssize_t n = 0;
  do {
    n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) numeric(addr, len, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) numeric(addr, len, ip, port);
}

time_t ConnectionStream::duration() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count();
}

const char* ConnectionStream::buffered_data(size_t& size) const {
  size = buffered();
  return size ? buffer_.data() + begin_ : nullptr;
}

void ConnectionStream::consume_buffered(size_t size) {
  begin_ += std::min(size, buffered());
}

int ConnectionStream::header_status() {
  while (buffered_view().starts_with("\r\n")) consume_buffered(2);
  const std::string_view pending = buffered_view();
  const std::size_t line_end = pending.find("\r\n");
  const std::size_t end = pending.find("\r\n\r\n");
  if (std::min(line_end, pending.size()) > limits_.max_request_line) return 414;
  const std::string_view block = pending.substr(0, std::min(end, pending.size()));
  std::size_t fields = 0;
  for (std::size_t at = line_end; at != std::string_view::npos && at < block.size();) {
    const std::size_t next = block.find("\r\n", at + 2);
    if (std::min(next, block.size()) - (at + 2) > limits_.max_header_line) return 431;
    if (++fields > limits_.max_header_count) return 431;
    at = next;
  }
  if (end != std::string_view::npos) {
    // A method token httplib does not parse would get its "malformed request" 400: say 501.
    // Anything else that is not a token is left to httplib's 400.
    const std::string_view method = pending.substr(0, pending.find(' '));
    const bool token =
        !method.empty() && method.size() < line_end &&
        std::all_of(method.begin(), method.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) ||
                 std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
        });
    return token && !known_method(method) ? 501 : 0;
  }
  if (pending.size() >= limits_.max_header_bytes) return 431;
  return kIncomplete;
}

bool known_method(std::string_view method) {
  for (std::string_view known :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"}) {
    if (method == known) return true;
  }
  return false;
}

int ConnectionStream::fill_headers() {
  while (true) {
    if (const int status = header_status(); status != kIncomplete) return status;
    ssize_t n = fill();
    if (n == kWaitedInVain) {
      if (timed_out()) return 408;
      continue;  // a read timeout before the deadline
    }
    if (n <= 0) return 0;  // peer closed or a socket error: httplib sees it
  }
}

namespace {

/// A chunk size (hex, leading zeros already dropped), nullopt for anything else or more than 15
/// digits (it fits 64 bits).
std::optional<std::uint64_t> parse_chunk_size(std::string_view text) {
  if (text.empty() || text.size() > 15) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : text) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return std::nullopt;
    n = n * 16 + static_cast<std::uint64_t>(d);
  }
  return n;
}

/// The longest chunk-size line and trailer section the poller waits for (httplib refuses more).
constexpr std::size_t kMaxChunkLine = 1024;
constexpr std::size_t kMaxTrailers = 8192;

}  // namespace

ConnectionStream::BodyStatus ConnectionStream::body_status(ChunkScan& scan) const {
  using State = BodyStatus::State;
  BodyStatus out;
  const std::string_view pending = buffered_view();
  const std::size_t head_end = pending.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return out;
  const std::size_t body_at = head_end + 4;
  const std::string_view block = pending.substr(0, head_end + 2);
  const std::size_t line_end = block.find("\r\n");
  const bool http10 = block.substr(0, line_end).ends_with("HTTP/1.0");
  // Framed as the server reads it (server/http_exchange.hpp framing_problem): Content-Length lines
  // that all say the same number, or Transfer-Encoding lines that together say "chunked".
  int lengths = 0, codings = 0;
  std::optional<std::uint64_t> length;
  bool lengths_agree = true;
  std::string coding;
  for (std::size_t at = line_end + 2; at < block.size();) {
    const std::size_t end = block.find("\r\n", at);
    const std::string_view field = block.substr(at, end - at);
    at = end + 2;
    const std::size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;  // httplib refuses the block
    const std::string_view name = field.substr(0, colon);
    const std::string_view value = trim_blanks(field.substr(colon + 1));
    if (same_name(name, "Content-Length")) {
      const auto n = parse_content_length(value);
      lengths_agree = lengths_agree && n && (lengths == 0 || n == length);
      length = n;
      ++lengths;
    } else if (same_name(name, "Transfer-Encoding")) {
      coding.append(codings++ > 0 ? ", " : "").append(value);
    } else if (same_name(name, "Expect") && !http10) {
      std::string lower(value);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.expects_continue = lower.find("100-continue") != std::string::npos;
    }
  }
  out.body_bytes = pending.size() - body_at;
  if (lengths == 0 && codings == 0) {
    out.body_bytes = 0;
    out.state = State::complete;  // no body
    return out;
  }
  if (lengths > 0 && codings > 0) return out;  // conflicting framing: the server refuses it
  if (lengths > 0) {
    if (!lengths_agree) return out;
    const std::uint64_t n = *length;
    if (n > limits_.max_body_bytes) {
      out.state = State::too_large;
    } else if (out.body_bytes >= n) {
      out.body_bytes = static_cast<std::size_t>(n);
      out.state = State::complete;
    } else {
      out.state = State::incomplete;
    }
    return out;
  }
  if (!same_name(trim_blanks(coding), "chunked")) return out;  // the server refuses others
  // The framed bytes buffered (size lines and extensions included) are bounded too.
  if (out.body_bytes > max_framed_body_bytes(limits_)) {
    out.state = State::too_large;
    return out;
  }
  // Chunked framing that is wrong (or too long a size line or trailer section) is refused here:
  // handed on, httplib would go on reading it on a worker.
  const auto malformed = [&out] {
    out.state = State::malformed;
    return out;
  };
  if (scan.at < body_at) scan = {body_at, 0};
  while (true) {
    const std::size_t pos = scan.at;
    const std::size_t eol = pending.find("\r\n", pos);
    if (eol == std::string_view::npos) {
      if (pending.size() - pos > kMaxChunkLine) return malformed();
      out.state = State::incomplete;
      return out;
    }
    std::string_view size_text = pending.substr(pos, eol - pos);
    size_text = trim_blanks(size_text.substr(0, size_text.find(';')));
    while (size_text.size() > 1 && size_text.front() == '0') size_text.remove_prefix(1);
    const auto size = parse_chunk_size(size_text);
    if (!size) return malformed();
    if (*size == 0) {
      // The trailer section ends at an empty line.
      for (std::size_t line = eol + 2;;) {
        const std::size_t end = pending.find("\r\n", line);
        if (end == std::string_view::npos) {
          if (pending.size() - eol > kMaxTrailers) return malformed();
          if (pending.substr(line).find('\n') != std::string_view::npos) return malformed();
          out.state = State::incomplete;
          return out;
        }
        if (pending.substr(line, end - line).find('\n') != std::string_view::npos) {
          return malformed();  // a bare LF in the trailer section
        }
        if (end == line) {
          out.body_bytes = end + 2 - body_at;
          out.state = State::complete;
          return out;
        }
        line = end + 2;
        if (line - eol > kMaxTrailers) return malformed();
      }
    }
    if (scan.data_bytes + *size > limits_.max_body_bytes) {
      out.state = State::too_large;
      return out;
    }
    const std::size_t need = eol + 2 + static_cast<std::size_t>(*size) + 2;
    if (pending.size() < need) {
      out.state = State::incomplete;
      return out;
    }
    if (pending.substr(need - 2, 2) != "\r\n") return malformed();
    scan = {need, scan.data_bytes + static_cast<std::size_t>(*size)};
  }
}

bool ConnectionStream::drop_header(std::string_view name) {
  const std::string_view pending = buffered_view();
  const std::size_t head_end = pending.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return false;
  for (std::size_t at = pending.find("\r\n") + 2; at < head_end + 2;) {
    const std::size_t end = pending.find("\r\n", at);
    const std::string_view field = pending.substr(at, end - at);
    const std::size_t colon = field.find(':');
    if (colon != std::string_view::npos && same_name(field.substr(0, colon), name)) {
      buffer_.erase(begin_ + at, end + 2 - at);
      return true;
    }
    at = end + 2;
  }
  return false;
}

void ConnectionStream::begin_response() {
  watching_head_ = true;
  head_.clear();
  closes_ = false;
}

ssize_t ConnectionStream::fill() {
  return receive(read_wait_ms(), false);
}

ssize_t ConnectionStream::fill_now() {
  return receive(0, true);
}

ssize_t ConnectionStream::receive(int wait_ms, bool now) {
  if (begin_ > 0 && begin_ == buffer_.size()) {
    buffer_.clear();
    begin_ = 0;
  } else if (begin_ > 65536) {
    buffer_.erase(0, begin_);
    begin_ = 0;
  }
  if (!now && wait_ms <= 0 && !tls_pending()) return kWaitedInVain;  // the deadline passed
  std::array<char, 16384> chunk{};
  ssize_t n = 0;
  if (tls_ != nullptr) {
    // A record that arrives a byte at a time still ends at the deadline (non-blocking session).
    n = tls_->read(chunk.data(), chunk.size(), std::max(wait_ms, 0));
    if (n == TlsSession::kTimedOut) return kWaitedInVain;
  } else {
    if (!now && !wait_for(fd_, POLLIN, wait_ms)) return kWaitedInVain;
    do {
      n = ::recv(fd_, chunk.data(), chunk.size(), now ? MSG_DONTWAIT : 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return kWaitedInVain;
  }
  if (n > 0) buffer_.append(chunk.data(), static_cast<std::size_t>(n));
  return n;
}

void ConnectionStream::watch_head(const char* ptr, std::size_t size) {
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

int ConnectionStream::read_wait_ms() const {
  auto wait = std::chrono::milliseconds(limits_.timeouts.read_s * 1000);
  if (deadline_) {
    // Rounded up: a wait cut short by rounding would end a read before its deadline.
    wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(*deadline_ - Clock::now()));
  }
  return static_cast<int>(wait.count());
}

// ---------------------------------------------------------------------------------------------
// Connection

Connection::Connection(int fd, const ConnectionLimits& limits, std::unique_ptr<TlsSession> tls)
    : fd_(fd),
      limits_(limits),
      tls_(std::move(tls)),
      stream_(fd, limits, tls_.get()),
      phase_(tls_ ? Phase::handshake : Phase::request),
      deadline_(Clock::now() + std::chrono::seconds(limits.timeouts.header_s)) {}

Connection::~Connection() {
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
}

bool Connection::request_buffered() {
  if (stream_.header_status() != 0) return false;
  ConnectionStream::ChunkScan scan;
  return stream_.body_status(scan).state != ConnectionStream::BodyStatus::State::incomplete;
}

void Connection::await_request(std::chrono::milliseconds wait) {
  phase_ = Phase::request;
  body_phase_ = false;
  chunk_scan_ = {};
  body_held_ = 0;
  started_ = stream_.buffered() > 0;
  const auto limit = started_ ? std::chrono::seconds(limits_.timeouts.header_s) : wait;
  deadline_ = Clock::now() + limit;
}

void Connection::refuse(const std::string& reply) {
  if (refusal_ == kPlainHttpOnTls) {  // no TLS was spoken: the reply goes as it is
    [[maybe_unused]] ssize_t sent =
        ::send(fd_, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(fd_, SHUT_WR);
    phase_ = Phase::draining;
    deadline_ = Clock::now() + limits_.linger;
    return;
  }
  send_now(reply);
  drain();
}

void Connection::drain() {
  if (tls_) tls_->close_notify();
  ::shutdown(fd_, SHUT_WR);
  phase_ = Phase::draining;
  deadline_ = Clock::now() + limits_.linger;
}

Next Connection::advance(const LightRequest& light, std::size_t body_allowance) {
  const Next next = step(light, body_allowance);
  if (next != Next::read && next != Next::stall) body_phase_ = false;
  return next;
}

Next Connection::step(const LightRequest& light, std::size_t body_allowance) {
  if (phase_ == Phase::handshake && !tls_checked_) {
    // A TLS client starts with a handshake record (0x16); a plain HTTP one with its method.
    char first = 0;
    const ssize_t n = ::recv(fd_, &first, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Next::read;
    tls_checked_ = true;
    if (n == 1 && first >= 'A' && first <= 'Z') {
      refusal_ = kPlainHttpOnTls;
      return Next::refuse;
    }
  }
  if (phase_ == Phase::handshake) {
    switch (tls_->handshake()) {
      case TlsStep::done:
        phase_ = Phase::request;
        deadline_ = Clock::now() + std::chrono::seconds(limits_.timeouts.header_s);
        return look(light, body_allowance);  // TLS 1.3 clients may send it with their Finished
      case TlsStep::want_read:
        return Next::read;
      case TlsStep::want_write:
        return Next::write;
      case TlsStep::failed:
        return Next::close;  // not TLS, or the client refused our certificate: nothing to say
    }
  }
  if (phase_ == Phase::draining) return discard();
  return look(light, body_allowance);
}

Next Connection::look(const LightRequest& light, std::size_t body_allowance) {
  if (body_phase_) return read_body(light, body_allowance);
  // The header block is read here, never waiting, so a client sending it slowly holds no worker.
  while (true) {
    const int status = stream_.header_status();
    if (status == 0) break;  // all here
    if (status != ConnectionStream::kIncomplete) {
      refusal_ = status;  // 414 / 431 / 501
      return Next::refuse;
    }
    const ssize_t n = stream_.fill_now();
    if (n == ConnectionStream::kWaitedInVain) return Next::read;
    if (n <= 0) {
      // The peer left (or failed): between requests nothing to say; with a request half sent,
      // httplib answers what it can of it on a worker.
      if (stream_.buffered() == 0) return Next::close;
      break;
    }
    if (!started_) {  // the request's first bytes: its header deadline starts
      started_ = true;
      deadline_ = Clock::now() + std::chrono::seconds(limits_.timeouts.header_s);
    }
  }
  if (stream_.header_status() != 0) return dispatch(light);  // the peer left mid-headers
  // Then the body, here too: a client sending it slowly holds no worker either.
  body_phase_ = true;
  chunk_scan_ = {};
  body_held_ = 0;
  body_deadline_ = Clock::now() + std::chrono::seconds(limits_.timeouts.body_s);
  deadline_ =
      std::min(body_deadline_, Clock::now() + std::chrono::seconds(limits_.timeouts.read_s));
  const ConnectionStream::BodyStatus body = stream_.body_status(chunk_scan_);
  if (body.expects_continue && body.state == ConnectionStream::BodyStatus::State::incomplete) {
    // The client waits for this before it sends the body; httplib must not send another.
    while (stream_.drop_header("Expect")) {
    }
    chunk_scan_ = {};
    send_now("HTTP/1.1 100 Continue\r\n\r\n");
  }
  return read_body(light, body_allowance);
}

Next Connection::read_body(const LightRequest& light, std::size_t body_allowance) {
  using State = ConnectionStream::BodyStatus::State;
  while (true) {
    const ConnectionStream::BodyStatus body = stream_.body_status(chunk_scan_);
    body_held_ = body.body_bytes;
    if (body.state == State::complete || body.state == State::unframed) return dispatch(light);
    if (body.state == State::too_large || body.state == State::malformed) {
      refusal_ = body.state == State::too_large ? 413 : 400;
      return Next::refuse;
    }
    if (body_allowance == 0) return Next::stall;
    const ssize_t n = stream_.fill_now();
    if (n == ConnectionStream::kWaitedInVain) return Next::read;
    if (n <= 0) return Next::close;  // the client left with its body half sent: nobody to answer
    body_allowance -= std::min(body_allowance, static_cast<std::size_t>(n));
    // The whole body within timeouts.body_s, and no silence longer than timeouts.read_s.
    deadline_ =
        std::min(body_deadline_, Clock::now() + std::chrono::seconds(limits_.timeouts.read_s));
  }
}

Next Connection::dispatch(const LightRequest& light) {
  lane_ = light && light(stream_.buffered_view().substr(0, kLookBytes)) ? Lane::reserved
                                                                        : Lane::general;
  return Next::dispatch;
}

void Connection::send_now(std::string_view bytes) {
  if (tls_) {
    tls_->write(bytes.data(), bytes.size(), 0);
  } else {
    [[maybe_unused]] ssize_t sent =
        ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

Next Connection::expire() {
  body_phase_ = false;
  if (phase_ == Phase::request && stream_.buffered() > 0) {
    refusal_ = 408;  // a request began but its headers or its body missed their deadline
    return Next::refuse;
  }
  return Next::close;
}

Next Connection::discard() {
  std::array<char, 16384> sink{};
  for (int chunks = 0; chunks < 64; ++chunks) {  // 1 MiB a step: other parked ones go on too
    const ssize_t n = ::recv(fd_, sink.data(), sink.size(), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Next::read;
    return Next::close;  // the client closed (or reset): it has read what it wanted
  }
  return Next::read;
}

}  // namespace clef::transport
