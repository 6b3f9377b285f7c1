#include "server/agent_check.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "util/error.hpp"

namespace clef::server {

std::string agent_reply(Health health, std::size_t waiting, int running, std::size_t capacity) {
  switch (health) {
    case Health::loading:
      return "maint";
    case Health::draining:
      return "drain";
    case Health::failed:
      return "down";
    case Health::ok:
      break;
  }
  const double busy =
      static_cast<double>(waiting + static_cast<std::size_t>(std::max(running, 0))) /
      static_cast<double>(capacity + 1);
  const int percent = std::clamp(static_cast<int>(100.0 * (1.0 - busy) + 0.5), 1, 100);
  return "up ready " + std::to_string(percent) + "%";
}

AgentCheck::AgentCheck(const std::string& host, int port, std::function<std::string()> reply)
    : reply_(std::move(reply)) {
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    throw Error(
        ErrorKind::invalid_request, "bind_failed",
        "agent check: cannot " + what + " " + host + ":" + std::to_string(port) + " (" + why + ")",
        "agent_port");
  };
  // IPv4 or IPv6, as the HTTP port is bound (a break test: --host ::1 failed here).
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    errno = EINVAL;
    fail("resolve");
  }
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
  fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail("open a socket for");
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd_, found->ai_addr, found->ai_addrlen) != 0) fail("bind");
  if (::listen(fd_, 64) != 0) fail("listen on");
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(wake_, O_CLOEXEC) != 0) fail("make a pipe for");
  thread_ = std::thread([this] { run(); });
}

AgentCheck::~AgentCheck() {
  const char stop = 's';
  if (wake_[1] >= 0) (void)!::write(wake_[1], &stop, 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void AgentCheck::run() {
  while (true) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::string line;
    try {
      line = reply_() + "\n";
    } catch (...) {
      line = "down\n";
    }
    // One short line; a peer that does not read it is not waited for.
    (void)!::send(client, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(client);
  }
}

}  // namespace clef::server
