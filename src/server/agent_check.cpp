#include "server/agent_check.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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
        ErrorKind::internal, "bind_failed",
        "agent check: cannot " + what + " " + host + ":" + std::to_string(port) + " (" + why + ")");
  };
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail("open a socket for");
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &addr.sin_addr) != 1) {
    errno = EINVAL;
    fail("parse the address");
  }
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  if (::listen(fd_, 64) != 0) fail("listen on");
  socklen_t len = sizeof addr;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
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
