// libFuzzer target: the HTTP connection layer as a client meets it - the vendored cpp-httplib
// 0.57.1 under clef's connection loop, header checks, handlers and error answers, over a real
// loopback socket (one in-process server deciding with the test double of tests/server). Each
// input is sent as raw bytes on a fresh connection, the client half-closes and reads until the
// server closes. Invariants:
//   - the server closes within 10 s (no hang) and never crashes or trips a sanitizer;
//   - what it sends is a sequence of whole HTTP/1.1 answers: a status line with a 3-digit
//     status, headers, a Content-Length and exactly that many body bytes; every final answer
//     carries exactly one X-Request-Id; an error answer (>= 400) has a JSON error body;
//   - every 128 inputs, a valid decision on a new connection is still answered 200 with the
//     same bytes as the first time.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>

#include "server/server_fixture.hpp"

namespace {

using Clock = std::chrono::steady_clock;

/// Discards the server's log.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
};

/// The one server all inputs go to. It lives until the process ends and is never destroyed:
/// libFuzzer ends with exit(), which destroys the statics the server made lazily while serving
/// (they were constructed after it, so they go first) before any destructor of ours could stop
/// it - stopping it then touched destroyed objects (UBSan reported it). The OS reclaims it.
struct Served {
  NullBuffer null_buffer;
  std::ostream log{&null_buffer};
  std::unique_ptr<clef::server::HttpServer> server;
  std::thread thread;
  int port = 0;
  std::string valid_answer;
};

Served& served() {
  static Served& s = *new Served;  // never destroyed, see above
  return s;
}

/// Sends `bytes` on a new connection, half-closes when `half_close` (the server then sees the end
/// of the input at once; a decision of a half-closed client counts as abandoned: 499), and
/// returns all it reads until the server closes; aborts when that takes more than 10 s (a hang).
std::string exchange(int port, const std::string& bytes, bool half_close) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Closed with a reset, not a FIN: thousands of connections a second would otherwise leave as
  // many client ports in TIME_WAIT and run out of them (connect() fails: EADDRNOTAVAIL).
  const linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  // The kernel may briefly refuse a new loopback connection at this rate (no free port, a full
  // accept queue): retried for up to 5 s; longer means the server is gone.
  int tries = 0;
  while (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (++tries > 500) {
      std::fprintf(stderr, "connect to the server failed: %s\n", std::strerror(errno));
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early (e.g. after a refusal)
    sent += static_cast<std::size_t>(n);
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string out;
  const auto until = Clock::now() + std::chrono::seconds(10);
  char buffer[16384];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) std::abort();  // the server neither answered nor closed: a hang
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Checks that `out` is a sequence of whole answers; aborts otherwise.
void check_answers(const std::string& out) {
  std::size_t at = 0;
  while (at < out.size()) {
    if (out.compare(at, 9, "HTTP/1.1 ") != 0 || out.size() < at + 12) std::abort();
    const int status = std::atoi(out.substr(at + 9, 3).c_str());
    if (status < 100 || status > 599) std::abort();
    const std::size_t end = out.find("\r\n\r\n", at);
    if (end == std::string::npos) std::abort();
    const std::string head = out.substr(at, end - at);
    at = end + 4;
    if (status < 200) continue;  // 100 Continue: the final answer follows
    if (count(head, "\r\nX-Request-Id: ") != 1) std::abort();
    const std::size_t length_at = head.find("\r\nContent-Length: ");
    if (length_at == std::string::npos) std::abort();
    const std::size_t length = std::strtoul(head.c_str() + length_at + 18, nullptr, 10);
    // An answer to HEAD has the length of the body it does not send: the next answer (or the
    // end) follows its head at once.
    if (at == out.size() || out.compare(at, 9, "HTTP/1.1 ") == 0) continue;
    if (out.size() - at < length) std::abort();
    const std::string body = out.substr(at, length);
    if (status >= 400 && body.rfind("{\"error\":{\"message\":", 0) != 0) std::abort();
    at += length;
  }
}

const std::string kCard =
    R"({"state":"Production database is down","questions":{"outage":{"type":"noul"}}})";

std::string valid_request() {
  return "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(kCard.size()) + "\r\n\r\n" + kCard;
}

/// The answer's body (after the head).
std::string body_of(const std::string& answer) {
  const std::size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : answer.substr(end + 4);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Served& s = served();
  clef::server::ServerConfig config = clef::server::testing::test_config();  // small limits
  config.http_threads = 4;
  config.timeouts.header_s = 2;
  config.timeouts.body_s = 2;
  auto control = std::make_shared<clef::server::testing::FakeControl>();
  s.server = std::make_unique<clef::server::HttpServer>(
      config, clef::server::testing::fake_factory(control), s.log);
  s.port = s.server->bind();
  s.thread = std::thread([&s] { s.server->serve(); });
  s.thread.detach();  // runs until the process ends
  if (!s.server->queue().wait_until_ready(std::chrono::seconds(30))) std::abort();
  s.valid_answer = body_of(exchange(s.port, valid_request(), false));
  if (s.valid_answer.empty()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Served& s = served();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  check_answers(exchange(s.port, bytes, true));
  static int inputs = 0;
  if (++inputs % 128 == 0 && body_of(exchange(s.port, valid_request(), false)) != s.valid_answer) {
    std::abort();  // the server stopped answering valid requests as it did
  }
  return 0;
}
