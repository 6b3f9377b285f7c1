#include "transport/connection_loop.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace clef::transport {

ConnectionServer::ConnectionServer(ConnectionLimits limits, EarlyReply early_reply,
                                   LightRequest light, std::shared_ptr<const TlsContext> tls)
    : limits_(limits),
      early_reply_(std::move(early_reply)),
      light_(std::move(light)),
      tls_(std::move(tls)) {
  // httplib owns the queue it makes (its API) for as long as its listen loop runs.
  new_task_queue = [this] {
    auto pool = std::make_unique<ConnectionPool>(
        limits_, light_,
        [this](std::unique_ptr<Connection> connection, Lane lane) {
          serve(std::move(connection), lane);
        },
        [this](int status, std::string_view head) {
          return early_reply_ ? early_reply_(status, head) : std::string();
        });
    pool_ = pool.get();
    return pool.release();
  };
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  std::unique_ptr<TlsSession> session;
  if (tls_) {
    session = tls_->session(sock);
    if (!session) {
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
      return false;
    }
  }
  pool_->park(std::make_unique<Connection>(sock, limits_, std::move(session)));
  return true;
}

void ConnectionServer::serve(std::unique_ptr<Connection> connection, Lane lane) {
  ConnectionStream& stream = connection->stream();
  std::string remote_addr, local_addr;
  int remote_port = -1, local_port = -1;
  stream.get_remote_ip_and_port(remote_addr, remote_port);
  stream.get_local_ip_and_port(local_addr, local_port);
  bool close_lingering = false;
  for (int here = 0; connection->served < limits_.max_requests && svr_sock_ != INVALID_SOCKET;
       ++here) {
    // A light request on the reserved lane is served alone; on the general lane, a request whose
    // header block and body are already buffered (pipelined) follows on this worker. Anything
    // else waits parked, costing no thread: the poller reads its headers and body (so a client
    // that sends a byte after each answer, or its body a byte a second, holds no worker).
    const bool more = here == 0 || (lane == Lane::general && connection->request_buffered());
    if (!more) {
      connection->await_request(std::chrono::seconds(limits_.timeouts.keep_alive_s));
      pool_->park(std::move(connection));
      return;
    }
    // The header block is here (the poller read it, or it was pipelined); the deadline only
    // bounds httplib's reads of it.
    stream.set_deadline(Clock::now() + std::chrono::seconds(limits_.timeouts.header_s));
    if (const int refused = stream.fill_headers(); refused != 0) {
      std::string reply =
          early_reply_ ? early_reply_(refused, stream.buffered_view()) : std::string();
      if (!reply.empty()) stream.write(reply.data(), reply.size());
      close_lingering = refused != 408;  // the rest of an oversized request is discarded
      break;
    }
    bool connection_closed = false;
    const bool last = connection->served + 1 == limits_.max_requests;
    stream.begin_response();
    const bool ok = serve_guarded([&] {
      return process_request(
          stream, remote_addr, remote_port, local_addr, local_port, last, connection_closed,
          [&](httplib::Request&) {
            stream.set_deadline(Clock::now() + std::chrono::seconds(limits_.timeouts.body_s));
          });
    });
    stream.set_deadline(std::nullopt);
    ++connection->served;
    if (stream.response_closes()) close_lingering = true;
    if (!ok || connection_closed || close_lingering) break;
  }
  if (close_lingering) {
    // What the client still sends is discarded on the poller, not here.
    connection->drain();
    pool_->park(std::move(connection));
    return;
  }
  if (connection->tls() != nullptr) connection->tls()->close_notify();
}  // connection closes

}  // namespace clef::transport
