#pragma once
// clef's connection loop over cpp-httplib 0.57.1: httplib::Server with its per-connection loop
// replaced (the virtual process_and_close_socket) and its thread pool replaced by a
// ConnectionPool (connection_pool.hpp: waiting connections parked with one poller, a reserved
// lane for light requests, "busy" answers when no worker is free); httplib still parses each
// request and calls clef's handlers through its protected process_request.
//
// What 0.57.1 does itself and this loop keeps: framing refusals (conflicting Content-Length,
// a transfer coding other than chunked), "100 Continue" only once a handler reads the body,
// closing after a refused body it did not read, draining on close.
// What 0.57.1 still does not do, and this loop adds as small named checks:
//   - a total deadline on a request's headers (slowloris): a client that sends its headers one
//     line every few seconds gets 408 after timeouts.header_s and the connection closes;
//   - the first request of a new connection may take the header deadline to arrive (its client
//     may be descheduled between connect() and send()), idle keep-alive waits keep_alive_timeout;
//   - pipelined requests: 0.57.1 starts a fresh stream (and read buffer) per request, dropping
//     requests already read; here one buffer lives as long as the connection;
//   - a response that says "Connection: close" ends the connection even when its body was read
//     (0.57.1 only stops when it drained an unread body): nothing after it is parsed;
//   - a body deadline (timeouts.body_s from the end of the headers);
//   - header sizes answered with their own statuses: a request line over 32 KiB gets 414 (0.57.1
//     closes without a word: its line reader gives up; a target over 8 KiB gets its own 414), a
//     header block over max_header_bytes, a header line over 8 KiB or more than 100 header fields
//     get 431 (0.57.1: 400).

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "transport/connection.hpp"
#include "transport/connection_pool.hpp"

namespace clef::transport {

class ConnectionServer : public httplib::Server {
 public:
  /// The complete HTTP response (status line, headers, body) for a request refused before httplib
  /// parses it: 408 (headers missed their deadline), 414 (request line too long) or 431 (header
  /// block or line too large); the connection closes after it. Called on the connection's worker
  /// thread.
  using EarlyReply = ConnectionPool::EarlyReply;

  /// `early_reply(429)` is also the answer to a request no worker took within limits.busy_after.
  /// `light`: which requests the reserved lane serves (none when empty). `tls` (optional): every
  /// connection first does the TLS handshake (within timeouts.header_s, on the poller: no thread
  /// waits for it), and the loop reads and writes through its session; a failed handshake closes
  /// the connection without an answer.
  ConnectionServer(ConnectionLimits limits, EarlyReply early_reply, LightRequest light = {},
                   std::shared_ptr<const TlsContext> tls = nullptr);

 private:
  /// Called by httplib's accept loop (through ConnectionPool::enqueue): parks the new connection.
  bool process_and_close_socket(socket_t sock) override;
  /// Serves the connection's next request (and those pipelined after it on the general lane) on a
  /// worker, then parks it again or closes it.
  void serve(std::unique_ptr<Connection> connection, Lane lane);

  ConnectionLimits limits_;
  EarlyReply early_reply_;
  LightRequest light_;
  std::shared_ptr<const TlsContext> tls_;
  /// The pool httplib's listen loop made with new_task_queue and owns; set before its first use.
  ConnectionPool* pool_ = nullptr;
};

}  // namespace clef::transport
