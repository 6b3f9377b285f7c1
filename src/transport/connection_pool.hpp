#pragma once
// Who holds a connection when. A connection that waits (for its TLS handshake, for its next
// request, or to be closed gracefully) costs no thread: it is parked with ONE poller thread. Once
// a request's first bytes are there the poller hands the connection to one of two lanes of worker
// threads: the reserved lane for light requests (GET /health, /metrics, /v1/models: a load
// balancer's probes), the general lane for the rest. A worker serves the request (and any already
// pipelined after it) and parks the connection again.
//
// The poller also reads each request's header block (never waiting), so a client that sends its
// handshake or headers slowly holds no worker either, and refuses a request whose headers are too
// large (414, 431) or too slow (408) itself. So idle keep-alive connections never hold a worker,
// probes never wait behind decisions, and a request that waited `busy_after` for a general worker
// (every one busy) is answered "busy" by the poller, without a worker, whatever the thread
// settings.
//
// It is the httplib::TaskQueue of the connection loop's httplib::Server: httplib's accept loop
// hands it every accepted socket (enqueue), and stops it (shutdown) when the server stops.

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/connection.hpp"

namespace clef::transport {

/// A fixed set of worker threads serving connections in arrival order.
class WorkerLane {
 public:
  /// Serves one connection on a worker thread (ownership passes to it).
  using Serve = std::function<void(std::unique_ptr<Connection>)>;

  WorkerLane(int threads, Serve serve);
  /// stop()s.
  ~WorkerLane();
  WorkerLane(const WorkerLane&) = delete;
  WorkerLane& operator=(const WorkerLane&) = delete;

  /// Queues `connection` for the next free worker.
  void push(std::unique_ptr<Connection> connection);
  /// The connections that have waited `age` or longer for a worker while every worker was
  /// serving another, taken out, oldest first (as many as there are idle workers stay).
  std::vector<std::unique_ptr<Connection>> take_waiting(std::chrono::milliseconds age);
  /// When the oldest connection take_waiting() may take was queued; nullopt when none.
  std::optional<Clock::time_point> oldest_waiting() const;
  /// Serves what is queued, then joins the workers. Idempotent.
  void stop();

 private:
  struct Waiting {
    std::unique_ptr<Connection> connection;
    Clock::time_point since;
  };
  void work();

  Serve serve_;
  const std::size_t thread_count_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Waiting> waiting_;
  std::size_t serving_ = 0;  ///< workers serving a connection now
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

class ConnectionPool final : public httplib::TaskQueue {
 public:
  /// Serves one request (or more) of a connection on `lane`'s worker, then parks it again or lets
  /// it close.
  using Serve = std::function<void(std::unique_ptr<Connection>, Lane lane)>;
  /// The complete HTTP answer (status line, headers, body) for a request refused without a
  /// worker: 429 when no worker took it within limits.busy_after (sent as 429 or 503), 408 when
  /// its headers missed their deadline, 414 / 431 when they are too large; the connection closes.
  /// `head`: what arrived of the request (its request line, when whole, names it in the log).
  using EarlyReply = std::function<std::string(int status, std::string_view head)>;

  /// Starts the poller and limits.worker_threads + limits.reserved_threads workers. `limits`
  /// must outlive the pool.
  ConnectionPool(const ConnectionLimits& limits, LightRequest light, Serve serve,
                 EarlyReply early_reply);
  /// shutdown()s.
  ~ConnectionPool() override;

  /// httplib's accept loop hands over an accepted socket: `accepted` (the connection loop's
  /// process_and_close_socket) runs at once on that thread; it only parks the connection.
  bool enqueue(std::function<void()> accepted) override;
  /// Closes every parked connection, then lets the workers finish what they hold. Idempotent.
  void shutdown() override;

  /// Parks `connection` with the poller (closes it when the pool is stopping).
  void park(std::unique_ptr<Connection> connection);

 private:
  void poll_loop();
  void wake();

  const ConnectionLimits& limits_;
  LightRequest light_;
  EarlyReply early_reply_;
  WorkerLane general_;
  WorkerLane reserved_;
  int wake_fd_ = -1;  ///< an eventfd that breaks the poller's wait
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> arriving_;
  bool stopping_ = false;
  std::thread poller_;
};

}  // namespace clef::transport
