#pragma once
// One accepted connection as it lives between requests and while one is served: its socket, its
// TLS session, the read buffer that lasts as long as the connection (ConnectionStream), and the
// non-blocking steps the connection pool's poller takes while no worker holds it (the TLS
// handshake, a look at the next request's first bytes, discarding what a refused client still
// sends). See connection_pool.hpp for who holds a connection when.

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "transport/connection_timeouts.hpp"
#include "transport/tls_context.hpp"

namespace clef::transport {

using Clock = std::chrono::steady_clock;

/// Timeouts of one connection (seconds unless named otherwise) and the worker threads that serve
/// connections.
struct ConnectionLimits {
  ConnectionTimeouts timeouts;
  int max_requests = 1000;                   ///< requests on one connection, then it closes
  std::size_t max_header_bytes = 64 * 1024;  ///< a longer header block gets 431
  std::size_t max_request_line = 32 * 1024;  ///< a longer request line gets 414 (httplib's limit)
  /// A longer header line gets 431 (httplib refuses lines of 8,191 bytes and more with a 400).
  std::size_t max_header_line = 8 * 1024 - 2;
  std::size_t max_header_count = 100;      ///< more header fields get 431 (httplib's limit: a 400)
  std::chrono::milliseconds linger{1000};  ///< most time spent discarding a refused body
  /// A larger request body (declared, or chunked as it arrives) gets 413 from the poller.
  std::size_t max_body_bytes = 16u << 20;
  /// Request bodies are read by the poller, never by a worker, so that a client sending its body
  /// slowly holds no worker; this bounds the bytes of all the bodies it holds at once (a body
  /// that would pass it waits, unread, until others are handed to workers).
  std::size_t body_buffer_bytes = 256u << 20;
  int worker_threads = 8;    ///< the general lane: every request but the light ones
  int reserved_threads = 2;  ///< the reserved lane: light requests (health, metrics, models)
  /// A request that waited this long for a general worker is answered "busy" (429/503) by the
  /// poller, without a worker.
  std::chrono::milliseconds busy_after{50};
};

/// The most bytes a chunked body of limits.max_body_bytes may take as it arrives (its size lines
/// and extensions too): more is a 413. limits.body_buffer_bytes must be at least this, so that
/// any body the server takes can be received alone.
inline std::size_t max_framed_body_bytes(const ConnectionLimits& limits) {
  return 2 * limits.max_body_bytes + 64 * 1024;
}

/// Which workers serve a connection's next request.
enum class Lane {
  general,   ///< decisions and everything else
  reserved,  ///< light requests only: they never wait behind decisions
};

/// True when a request that starts with `head` (its first bytes, e.g. "GET /health HTTP/1.1") is
/// light: served on the reserved lane.
using LightRequest = std::function<bool(std::string_view head)>;

/// httplib::Stream over one accepted socket (through its TLS session under HTTPS), with a read
/// buffer that lives as long as the connection (pipelining), an optional deadline on reads (header
/// and body phases), and a look at each response's head as it is written (does it close the
/// connection?).
class ConnectionStream final : public httplib::Stream {
 public:
  /// `limits` and `tls` (nullptr: plain HTTP) must outlive the stream.
  ConnectionStream(int fd, const ConnectionLimits& limits, TlsSession* tls);

  bool is_readable() const override;
  bool wait_readable() const override;
  bool wait_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }
  time_t duration() const override;
  const char* buffered_data(size_t& size) const override;
  void consume_buffered(size_t size) override;

  /// Bytes read from the socket that no request has taken yet.
  std::size_t buffered() const { return buffer_.size() - begin_; }
  /// The bytes buffered() counts.
  std::string_view buffered_view() const { return {buffer_.data() + begin_, buffered()}; }
  /// True when the TLS session holds decrypted bytes the socket no longer shows.
  bool tls_pending() const { return tls_ != nullptr && tls_->pending() > 0; }
  void set_deadline(std::optional<Clock::time_point> deadline) { deadline_ = deadline; }

  /// header_status(): the header block is not all here yet.
  static constexpr int kIncomplete = -1;
  /// fill_now(): nothing more is there.
  static constexpr ssize_t kWaitedInVain = -2;

  /// The buffered request's header block: 0 complete ("\r\n\r\n"), kIncomplete, or the status to
  /// refuse it with: 414 / 431 when the request line / the header block or a header line is over
  /// the limits, 501 when the complete block's method is a token no HTTP server here implements
  /// (known_method; RFC 9110 section 9.1: an unrecognized method is 501). Empty lines before the
  /// request line are dropped first (RFC 9112 section 2.2: a client may send a CRLF after a
  /// request's body).
  int header_status();
  /// Where the buffered request stands once its header block is here (header_status() 0):
  /// whether its body is all buffered, still arriving, or framed so that httplib must refuse it.
  struct BodyStatus {
    enum class State {
      complete,    ///< header block and body all buffered: a worker reads them without waiting
      incomplete,  ///< more body bytes to come
      too_large,   ///< over limits.max_body_bytes (declared or seen): 413
      malformed,   ///< chunked framing that is wrong: 400
      unframed,    ///< conflicting framing the server refuses from the headers (no body is read)
    };
    State state = State::unframed;
    std::size_t body_bytes = 0;     ///< body bytes buffered so far
    bool expects_continue = false;  ///< "Expect: 100-continue" on an HTTP/1.1 request
  };
  /// Where the scan of a chunked body goes on (kept by the caller between calls, so a body
  /// arriving in many pieces is scanned once): the next chunk's size line, and the chunk data
  /// bytes before it.
  struct ChunkScan {
    std::size_t at = 0;
    std::size_t data_bytes = 0;
  };
  /// The body of the buffered request, whose header block is complete.
  BodyStatus body_status(ChunkScan& scan) const;
  /// Removes the first header field line named `name` from the buffered header block; false
  /// when there is none (the poller answers "Expect: 100-continue" itself, so httplib must not
  /// send a second 100).
  bool drop_header(std::string_view name);

  /// Reads until header_status() is not kIncomplete (its result then), or the peer closes or
  /// fails (httplib sees that): 0; 408 when the deadline passed first.
  int fill_headers();
  /// Appends what the socket holds now, never waiting: > 0 bytes, 0 the peer closed, -1 an
  /// error, kWaitedInVain when nothing is there.
  ssize_t fill_now();

  bool timed_out() const { return deadline_ && Clock::now() >= *deadline_; }

  /// Starts watching the next response's head; response_closes() tells what it said.
  void begin_response();
  bool response_closes() const { return closes_; }

 private:
  /// Appends what one read brings to the buffer; its result (0: peer closed, -1: error,
  /// kWaitedInVain: nothing arrived within the read timeout or before the deadline).
  ssize_t fill();
  /// fill() waiting at most `wait_ms`, or (`now`) not at all.
  ssize_t receive(int wait_ms, bool now);
  void watch_head(const char* ptr, std::size_t size);
  /// How long the next read may wait, ms: the read timeout, cut at the deadline.
  int read_wait_ms() const;

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

/// What a connection waits for next while parked (Connection::advance).
/// Connection::refusal() for a plain HTTP request on a TLS port (nginx's internal 497): answered
/// in plain HTTP, so that the client shows the reason (curl otherwise reports an empty reply).
inline constexpr int kPlainHttpOnTls = 497;

/// Whether `method` is one the HTTP layer parses (cpp-httplib's set: GET, HEAD, POST, PUT,
/// DELETE, CONNECT, OPTIONS, TRACE, PATCH, PRI); the router answers those it does not serve 404
/// or 405.
bool known_method(std::string_view method);

enum class Next {
  read,      ///< the socket to be readable
  write,     ///< the socket to be writable (a TLS handshake)
  dispatch,  ///< a request's header block is there: hand it to a worker on Connection::lane()
  /// answer Connection::refusal() (408, 414, 431; kPlainHttpOnTls) without a worker, then drain
  refuse,
  close,  ///< done: the peer left, failed, or was answered and drained
  /// its body is incomplete and the poller's body buffer is full: not read until some is free
  stall,
};

/// One accepted connection. Owns its socket: the destructor closes it. One thread at a time
/// (the poller while parked, then one worker).
class Connection {
 public:
  /// `tls`: the connection's TLS session, handshake still to do; nullptr for plain HTTP. The
  /// first request (after the handshake) must start within limits.timeouts.header_s.
  Connection(int fd, const ConnectionLimits& limits, std::unique_ptr<TlsSession> tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  ConnectionStream& stream() { return stream_; }
  TlsSession* tls() { return tls_.get(); }
  /// Until when the poller keeps it parked; it closes afterwards.
  Clock::time_point deadline() const { return deadline_; }
  /// Where advance() said the next request goes.
  Lane lane() const { return lane_; }
  /// The status advance() or expire() said to refuse the request with.
  int refusal() const { return refusal_; }

  /// True when the next request's header block and body are all buffered (or framed so that
  /// httplib refuses it at once): a worker may serve it without waiting for the client.
  bool request_buffered();

  /// Parks it to wait `wait` at most for the next request's first bytes.
  void await_request(std::chrono::milliseconds wait);
  /// Sends `reply` (best effort, never waiting) and parks it to discard what the client still
  /// sends, for limits.linger at most, so closing does not reset the connection before the
  /// client has read the reply.
  void refuse(const std::string& reply);
  /// Parks it to discard what the client still sends (after close_notify under TLS), for
  /// limits.linger at most.
  void drain();

  /// One step on the poller thread, never waiting: the handshake, reading the next request's
  /// header block and then its body (then `light` picks the lane), or discarding. It reads at
  /// most about `body_allowance` body bytes (the poller's share of limits.body_buffer_bytes
  /// left): with none left and the body incomplete it answers Next::stall. Call when the socket
  /// shows what the last step waited for, once when it is parked, and again for a stalled one
  /// when body allowance is free.
  Next advance(const LightRequest& light, std::size_t body_allowance = SIZE_MAX);
  /// Body bytes of the request being read that the poller holds now (0 outside the body phase).
  std::size_t body_bytes_held() const { return body_phase_ ? body_held_ : 0; }
  /// The deadline passed while parked: refuse (408: a request's headers came too slowly) or close.
  Next expire();

  int served = 0;  ///< requests answered on it

 private:
  enum class Phase { handshake, request, draining };

  Next step(const LightRequest& light, std::size_t body_allowance);
  Next look(const LightRequest& light, std::size_t body_allowance);
  /// The body phase of look(): reads what there is (up to `body_allowance`), then dispatches,
  /// refuses (413), waits for more, or stalls.
  Next read_body(const LightRequest& light, std::size_t body_allowance);
  Next dispatch(const LightRequest& light);
  Next discard();
  /// Sends `bytes` as far as the socket takes them now, never waiting.
  void send_now(std::string_view bytes);

  int fd_;
  const ConnectionLimits& limits_;
  std::unique_ptr<TlsSession> tls_;
  ConnectionStream stream_;
  Phase phase_;
  Clock::time_point deadline_;
  bool started_ = false;  ///< the next request's first bytes are here (its header deadline runs)
  bool tls_checked_ = false;  ///< the first byte on a TLS port was looked at (plain HTTP or not)
  Lane lane_ = Lane::general;
  int refusal_ = 0;
  bool body_phase_ = false;                 ///< the header block is here; its body is being read
  Clock::time_point body_deadline_;         ///< the whole body by then (limits.timeouts.body_s)
  ConnectionStream::ChunkScan chunk_scan_;  ///< body_status's place in a chunked body
  std::size_t body_held_ = 0;               ///< body bytes buffered in the body phase
};

}  // namespace clef::transport
