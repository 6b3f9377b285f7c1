// The probe finds a connection's socket by its endpoints and sees the peer close it.

#include "server/connection_probe.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "raw_socket.hpp"

namespace clef::server {
namespace {

struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, 4);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd); }
};

int local_port_of(int fd, bool peer) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (peer)
    ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  else
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

TEST(ConnectionProbe, FindsTheAcceptedSocketAndSeesThePeerClose) {
  Listener listener;
  testing::RawSocket client(listener.port);
  ASSERT_TRUE(client.valid());
  int accepted = ::accept(listener.fd, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  ConnectionEndpoints endpoints{"127.0.0.1", listener.port, "127.0.0.1",
                                local_port_of(accepted, true)};
  EXPECT_EQ(find_connection_socket(endpoints), accepted);
  EXPECT_FALSE(peer_closed(accepted));
  EXPECT_FALSE(client_gone(endpoints));

  // Unread request bytes from a live client do not count as gone.
  ASSERT_TRUE(client.send_all("GET / HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(client_gone(endpoints));

  client.close();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = client_gone(endpoints);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(gone);
  ::close(accepted);
}

TEST(ConnectionProbe, UnknownEndpointsAreNotGone) {
  ConnectionEndpoints nowhere{"127.0.0.1", 1, "127.0.0.1", 2};
  EXPECT_EQ(find_connection_socket(nowhere), -1);
  EXPECT_FALSE(client_gone(nowhere));
  EXPECT_FALSE(peer_closed(-1));
}

}  // namespace
}  // namespace clef::server
