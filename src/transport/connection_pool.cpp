#include "transport/connection_pool.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "util/error.hpp"

namespace clef::transport {

// ---------------------------------------------------------------------------------------------
// WorkerLane

WorkerLane::WorkerLane(int threads, Serve serve)
    : serve_(std::move(serve)), thread_count_(static_cast<std::size_t>(std::max(threads, 1))) {
  for (std::size_t i = 0; i < thread_count_; ++i) threads_.emplace_back([this] { work(); });
}

WorkerLane::~WorkerLane() {
  stop();
}

void WorkerLane::push(std::unique_ptr<Connection> connection) {
  {
    std::lock_guard lock(mutex_);
    waiting_.push_back({std::move(connection), Clock::now()});
  }
  wake_.notify_one();
}

std::vector<std::unique_ptr<Connection>> WorkerLane::take_waiting(std::chrono::milliseconds age) {
  std::vector<std::unique_ptr<Connection>> taken;
  const Clock::time_point before = Clock::now() - age;
  std::lock_guard lock(mutex_);
  // The first ones are for the idle workers (maybe just slow to wake on a loaded machine).
  const std::size_t idle = thread_count_ - std::min(thread_count_, serving_);
  while (waiting_.size() > idle && waiting_[idle].since <= before) {
    taken.push_back(std::move(waiting_[idle].connection));
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(idle));
  }
  return taken;
}

std::optional<Clock::time_point> WorkerLane::oldest_waiting() const {
  std::lock_guard lock(mutex_);
  const std::size_t idle = thread_count_ - std::min(thread_count_, serving_);
  if (waiting_.size() <= idle) return std::nullopt;
  return waiting_[idle].since;
}

void WorkerLane::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void WorkerLane::work() {
  while (true) {
    std::unique_ptr<Connection> connection;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;  // stopping, and nothing left to serve
      connection = std::move(waiting_.front().connection);
      waiting_.pop_front();
      ++serving_;
    }
    serve_(std::move(connection));
    std::lock_guard lock(mutex_);
    --serving_;
  }
}

// ---------------------------------------------------------------------------------------------
// ConnectionPool

ConnectionPool::ConnectionPool(const ConnectionLimits& limits, LightRequest light, Serve serve,
                               EarlyReply early_reply)
    : limits_(limits),
      light_(std::move(light)),
      early_reply_(std::move(early_reply)),
      general_(limits.worker_threads,
               [serve](std::unique_ptr<Connection> c) { serve(std::move(c), Lane::general); }),
      reserved_(limits.reserved_threads,
                [serve](std::unique_ptr<Connection> c) { serve(std::move(c), Lane::reserved); }),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (wake_fd_ < 0) throw Error(ErrorKind::internal, "eventfd", "cannot make the poller's eventfd");
  poller_ = std::thread([this] { poll_loop(); });
}

ConnectionPool::~ConnectionPool() {
  shutdown();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool ConnectionPool::enqueue(std::function<void()> accepted) {
  accepted();
  return true;
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  if (poller_.joinable()) poller_.join();
  general_.stop();
  reserved_.stop();
}

void ConnectionPool::park(std::unique_ptr<Connection> connection) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;  // closes it
    arriving_.push_back(std::move(connection));
  }
  wake();
}

void ConnectionPool::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionPool::poll_loop() {
  std::vector<std::unique_ptr<Connection>> parked;
  std::vector<Next> waits;  // what each parked connection waits for
  std::vector<pollfd> fds;
  std::size_t held = 0;  // body bytes the parked connections hold (limits.body_buffer_bytes)
  const auto allowance = [&] {
    return held < limits_.body_buffer_bytes ? limits_.body_buffer_bytes - held : 0;
  };
  // Takes a step of parked[i] and keeps it, hands it over or lets it close.
  auto settle = [&](std::size_t i, Next next) {
    if (next == Next::dispatch) {
      (parked[i]->lane() == Lane::reserved ? reserved_ : general_).push(std::move(parked[i]));
    } else if (next == Next::close) {
      parked[i].reset();
    } else if (next == Next::refuse) {
      parked[i]->refuse(early_reply_(parked[i]->refusal(), parked[i]->stream().buffered_view()));
      waits[i] = Next::read;
    } else {
      waits[i] = next;
    }
  };
  // One step of parked[i] (`expire`: its deadline passed), its body bytes counted.
  auto step = [&](std::size_t i, bool expire) {
    const std::size_t before = parked[i]->body_bytes_held();
    const Next next = expire ? parked[i]->expire() : parked[i]->advance(light_, allowance());
    held = held - before + parked[i]->body_bytes_held();
    settle(i, next);
  };
  while (true) {
    std::vector<std::unique_ptr<Connection>> arrived;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) break;
      arrived.swap(arriving_);
    }
    // A first step at once: bytes may be buffered already (pipelined, or inside the TLS session).
    for (auto& connection : arrived) {
      parked.push_back(std::move(connection));
      waits.push_back(Next::read);
      step(parked.size() - 1, false);
    }
    // A request no general worker took in time is answered busy, here, and drained.
    for (auto& connection : general_.take_waiting(limits_.busy_after)) {
      connection->refuse(early_reply_(429, connection->stream().buffered_view()));
      parked.push_back(std::move(connection));
      waits.push_back(Next::read);
    }
    // Drop the settled ones.
    std::size_t kept = 0;
    bool stalled = false;
    for (std::size_t i = 0; i < parked.size(); ++i) {
      if (!parked[i]) continue;
      parked[kept] = std::move(parked[i]);
      waits[kept] = waits[i];
      stalled = stalled || waits[kept] == Next::stall;
      ++kept;
    }
    parked.resize(kept);
    waits.resize(kept);

    const Clock::time_point now = Clock::now();
    Clock::time_point until = now + std::chrono::seconds(1);
    for (const auto& connection : parked) until = std::min(until, connection->deadline());
    if (auto oldest = general_.oldest_waiting())
      until = std::min(until, *oldest + limits_.busy_after);
    if (stalled && allowance() > 0) until = now;  // body buffer freed: the stalled ones go on
    const int timeout_ms = static_cast<int>(
        std::max<long long>(std::chrono::ceil<std::chrono::milliseconds>(until - now).count(), 0));

    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (std::size_t i = 0; i < parked.size(); ++i) {
      // A stalled one is not read (its client's sends back up): only its hang-up is watched.
      const short events = waits[i] == Next::write ? POLLOUT : waits[i] == Next::stall ? 0 : POLLIN;
      fds.push_back({parked[i]->fd(), events, 0});
    }
    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) ready = 0;
    if (fds[0].revents != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof count);
    }
    const Clock::time_point after = Clock::now();
    for (std::size_t i = 0; i < parked.size(); ++i) {
      if (waits[i] == Next::stall && (fds[i + 1].revents & (POLLHUP | POLLERR)) != 0) {
        held -= parked[i]->body_bytes_held();
        settle(i, Next::close);  // the client gave up
      } else if (fds[i + 1].revents != 0 || (waits[i] == Next::stall && allowance() > 0)) {
        step(i, false);
      } else if (after >= parked[i]->deadline()) {
        step(i, true);  // no request (or handshake, body, or close) in time
      }
    }
  }
  // Stopping: every parked connection closes (their destructors), and any that arrive later.
  std::lock_guard lock(mutex_);
  arriving_.clear();
}

}  // namespace clef::transport
