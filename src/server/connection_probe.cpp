#include "server/connection_probe.hpp"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <memory>

namespace clef::server {

namespace {

struct DirCloser {
  void operator()(DIR* dir) const { closedir(dir); }
};

/// Numeric host and port of a socket address; false when it is not an IP address.
bool numeric(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char host_buf[NI_MAXHOST];
  char port_buf[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host_buf, sizeof host_buf,
                  port_buf, sizeof port_buf, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  host = host_buf;
  port = std::atoi(port_buf);
  return true;
}

bool matches(int fd, const ConnectionEndpoints& want) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  std::string host;
  int port = -1;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  if (!numeric(addr, len, host, port) || port != want.remote_port || host != want.remote_addr) {
    return false;
  }
  len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  return numeric(addr, len, host, port) && port == want.local_port && host == want.local_addr;
}

}  // namespace

int find_connection_socket(const ConnectionEndpoints& endpoints) {
  std::unique_ptr<DIR, DirCloser> dir(opendir("/proc/self/fd"));
  if (!dir) return -1;
  int self = dirfd(dir.get());
  while (dirent* entry = readdir(dir.get())) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == self) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (matches(static_cast<int>(fd), endpoints)) return static_cast<int>(fd);
  }
  return -1;
}

bool peer_closed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

bool client_gone(const ConnectionEndpoints& endpoints) {
  return peer_closed(find_connection_socket(endpoints));
}

}  // namespace clef::server
