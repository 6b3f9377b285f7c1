#pragma once
// clef's connection loop over cpp-httplib 0.57.1: httplib::Server with its per-connection loop
// replaced (the virtual process_and_close_socket); httplib still parses each request and calls
// clef's handlers through its protected process_request.
//
// What 0.57.1 does itself and this loop keeps: framing refusals (conflicting Content-Length,
// a transfer coding other than chunked), "100 Continue" only once a handler reads the body,
// closing after a refused body it did not read, draining on close.
// What 0.57.1 still does not do, and this loop adds as small named checks:
//   - a total deadline on a request's headers (slowloris): a client that sends its headers one
//     line every few seconds gets 408 after header_timeout_s and the connection closes;
//   - the first request of a new connection may take the header deadline to arrive (its client
//     may be descheduled between connect() and send()), idle keep-alive waits keep_alive_timeout;
//   - pipelined requests: 0.57.1 starts a fresh stream (and read buffer) per request, dropping
//     requests already read; here one buffer lives as long as the connection;
//   - a response that says "Connection: close" ends the connection even when its body was read
//     (0.57.1 only stops when it drained an unread body): nothing after it is parsed;
//   - a body deadline (body_timeout_s from the end of the headers);
//   - header sizes answered with their own statuses: a request line over 32 KiB gets 414 (0.57.1
//     closes without a word: its line reader gives up; a target over 8 KiB gets its own 414), a
//     header block over max_header_bytes, a header line over 8 KiB or more than 100 header fields
//     get 431 (0.57.1: 400).

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "server/tls_context.hpp"

namespace clef::server {

/// Timeouts of one connection, seconds.
struct ConnectionLimits {
  int read_timeout_s = 10;       ///< one read() may wait this long
  int write_timeout_s = 10;      ///< one write() may wait this long
  int keep_alive_timeout_s = 5;  ///< idle time before the next request's first byte
  int header_timeout_s = 10;     ///< first byte of a request -> its headers complete
  int body_timeout_s = 30;       ///< headers complete -> body read (reads fail afterwards)
  int max_requests = 1000;       ///< requests on one connection, then it closes
  std::size_t max_header_bytes = 64 * 1024;  ///< a longer header block gets 431
  std::size_t max_request_line = 32 * 1024;  ///< a longer request line gets 414 (httplib's limit)
  /// A longer header line gets 431 (httplib refuses lines of 8,191 bytes and more with a 400).
  std::size_t max_header_line = 8 * 1024 - 2;
  std::size_t max_header_count = 100;      ///< more header fields get 431 (httplib's limit: a 400)
  std::chrono::milliseconds linger{1000};  ///< most time spent discarding a refused body
};

class ConnectionServer : public httplib::Server {
 public:
  /// The complete HTTP response (status line, headers, body) for a request refused before httplib
  /// parses it: 408 (headers missed their deadline), 414 (request line too long) or 431 (header
  /// block or line too large); the connection closes after it. Called on the connection's worker
  /// thread.
  using EarlyReply = std::function<std::string(int status)>;

  /// `tls` (optional): every connection first does the TLS handshake (within header_timeout_s),
  /// and the loop reads and writes through its session; a failed handshake closes the connection
  /// without an answer.
  ConnectionServer(ConnectionLimits limits, EarlyReply early_reply,
                   std::shared_ptr<const TlsContext> tls = nullptr);

 private:
  bool process_and_close_socket(socket_t sock) override;

  ConnectionLimits limits_;
  EarlyReply early_reply_;
  std::shared_ptr<const TlsContext> tls_;
};

}  // namespace clef::server
