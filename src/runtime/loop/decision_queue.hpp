#pragma once
// The bounded queue between the HTTP threads and the ONE runtime thread that owns the engine's
// Runner (not thread-safe). The runtime thread loads the model, runs one warm-up decision, then
// decides queued requests in the one decision loop (runtime/loop/decision_loop.hpp). The HTTP
// threads prepare their requests themselves on the shared const Preparer before they queue, so the
// queue holds only requests that can be decided and the runtime thread only runs the model.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "json/value.hpp"
#include "runtime/loop/decision_loop.hpp"
#include "runtime/loop/engine.hpp"
#include "runtime/loop/preparer.hpp"
#include "util/error.hpp"

namespace clef::runtime {

/// Life of the queue: loading -> ready -> draining -> stopped, or loading -> failed (final).
enum class QueueState { loading, ready, failed, draining, stopped };

/// The 503 for a request that meets the queue in `state` when it is not ready: "model_loading",
/// "model_failed", or "shutting_down" (draining, stopped; also what a draining server answers).
Error unavailable_error(QueueState state);

/// The request the runtime thread decides once after loading, before /health says ok: it touches
/// every stage (tokenizer, backbone prefill, joint schema head) so the first real request does
/// not pay for lazy initialization.
/// {"state": "warm-up", "questions": {"ready": {"type": "noul"}}} (`model` left to its default).
json::Value warmup_request();

class DecisionQueue {
 public:
  /// Loads the engine (make_engine); runs on the runtime thread. May throw (the queue
  /// becomes `failed`).
  using Factory = std::function<Engine()>;

  /// A queue in state `loading` that has not started yet (see start()).
  /// `capacity`: most requests waiting (not counting the one being decided), >= 1.
  DecisionQueue(Factory factory, std::size_t capacity, json::Value warmup);

  /// Starts the runtime thread: it calls the factory, decides the warm-up request once, and then
  /// serves. Idempotent; a no-op after drain().
  void start();
  /// drain()s.
  ~DecisionQueue();

  DecisionQueue(const DecisionQueue&) = delete;
  DecisionQueue& operator=(const DecisionQueue&) = delete;

  /// Prepares a parsed request body with the loaded model's Preparer, on the calling thread (any
  /// thread; several at once). Throws clef::Error: what Preparer::prepare throws (400/413/415
  /// naming the field), or unavailable (503) as submit() when no model is ready.
  PreparedRequest prepare(json::Value body, const Cancellation& cancellation = {},
                          const util::MemoryCharge& charge = {});

  /// Queues a prepared request for the runtime thread; the future is always fulfilled (also on
  /// drain). Its cancellation is asked just before its turn (cancelled: dropped, not decided) and
  /// while it is decided (the decision stops). Throws clef::Error: overloaded / "queue_full"
  /// (429) when `capacity` requests wait; unavailable (503) with code "model_loading",
  /// "model_failed" or "shutting_down".
  std::future<DecisionOutcome> submit(PreparedRequest prepared);

  /// Takes every waiting request whose cancellation was requested out of the queue at once:
  /// their places are free again (depth(), queue_full) and their outcomes are dropped, without
  /// waiting for their turn. The thread that sees its client leave calls it after cancelling.
  /// Thread-safe.
  void withdraw_cancelled();

  /// Stops accepting, lets the runtime thread finish every queued and running decision, and
  /// joins it (waiting for the model load to finish if it is still loading; a queue never
  /// started just stops). Idempotent, thread-safe.
  void drain();

  /// Blocks until the model is loaded (true) or failed/stopped (false), at most `timeout`
  /// (false on timeout).
  bool wait_until_ready(std::chrono::milliseconds timeout) const;

  QueueState state() const;
  /// The served model (its load_seconds: load + warm-up), once it is ready.
  std::optional<ServedModel> served() const;
  /// The serving runner's state-cache counters as the runtime thread published them with its
  /// latest results (all zero while no model serves). Thread-safe.
  cache::StateCacheStats state_cache_stats() const;
  /// What the factory or the warm-up decision threw, when state() is failed.
  std::string load_error() const;
  std::size_t depth() const;  ///< requests waiting
  /// Decisions in progress and not suspended: with parallel() 1 at most 1 (a long decision
  /// suspended for shorter ones counts once), else how many are in the batch.
  int in_flight() const;
  std::size_t capacity() const { return capacity_; }
  /// How long until the runtime thread next takes a waiting request, estimated from the recent
  /// decisions: their mean time (an exponential moving average, weight kRecentWeight on the
  /// newest) over the decisions the runner runs at once (parallel()), in milliseconds. nullopt
  /// before any request was decided (the warm-up decision does not count). What a 429 says in
  /// `retry-after-ms`. Thread-safe.
  std::optional<double> slot_wait_ms() const;

 private:
  /// A request submitted: waiting in jobs_, then (its prepared request moved into the loop) kept
  /// by ticket until its outcome goes to its promise.
  struct Job {
    PreparedRequest prepared;
    std::promise<DecisionOutcome> promise;
    std::chrono::steady_clock::time_point submitted;
    double queue_wait_ms = 0;  ///< submitted -> began, once it began
  };

  void run(Factory factory, json::Value warmup);
  /// The factory's engine after its warm-up decision, or an empty one (state failed).
  Engine load(const Factory& factory, const json::Value& warmup);
  /// Drives the one decision loop (DecisionLoop) until drained: before every step the
  /// loop plans, from the requests waiting, which begin (and, with one slot, which decision is
  /// suspended for a much shorter one or resumed); those leave the queue, the loop carries the
  /// plan out and steps. A new request joins at the next step, so a short request does not wait
  /// for a long one to finish, at any parallel().
  void serve(Runner& runner);

  /// The waiting requests whose cancellation was requested, taken out of jobs_; mutex_ held.
  /// The caller drop()s them after unlocking.
  std::vector<Job> take_cancelled();
  /// Sets each of `jobs`'s promise to a dropped outcome.
  static void drop(std::vector<Job> jobs);

  /// Counts one decided request that took `ms` in slot_wait_ms()'s average; mutex_ held.
  void note_decision_time(double ms);
  static constexpr double kRecentWeight = 0.2;

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;           ///< wakes the runtime thread
  mutable std::condition_variable state_cv_;  ///< wakes wait_until_ready
  std::deque<Job> jobs_;
  QueueState state_ = QueueState::loading;
  bool closing_ = false;
  int in_flight_ = 0;
  int parallel_ = 1;                          ///< the serving runner's parallel()
  std::optional<double> recent_decision_ms_;  ///< slot_wait_ms()'s average, once one is decided
  /// The loaded model, while it serves: prepare() takes a share and prepares unlocked.
  std::shared_ptr<const Preparer> preparer_;
  /// The runner's state-cache counters as the runtime thread last published them (after the
  /// warm-up, then with every decision that leaves the loop); HTTP threads never call the runner.
  cache::StateCacheStats cache_stats_;
  std::optional<ServedModel> served_;
  std::string load_error_;
  Factory factory_;        ///< moved into the runtime thread by start()
  json::Value warmup_;     ///< likewise
  std::mutex join_mutex_;  ///< guards thread_ (start, drain)
  std::thread thread_;
};

}  // namespace clef::runtime
