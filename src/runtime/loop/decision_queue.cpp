#include "runtime/loop/decision_queue.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "util/elapsed.hpp"
#include "util/error.hpp"

namespace clef::runtime {

namespace {

using Clock = std::chrono::steady_clock;

using util::ms_between;

}  // namespace

Error unavailable_error(QueueState state) {
  switch (state) {
    case QueueState::loading:
      return Error(ErrorKind::unavailable, "model_loading",
                   "the model is still loading; retry shortly");
    case QueueState::failed:
      return Error(ErrorKind::unavailable, "model_failed", "the model failed to load");
    case QueueState::draining:
    case QueueState::stopped:
    case QueueState::ready:
      break;
  }
  return Error(ErrorKind::unavailable, "shutting_down", "the server is shutting down");
}

json::Value warmup_request() {
  return json::Value::object(
      {{"state", json::Value::string("warm-up")},
       {"questions",
        json::Value::object(
            {{"ready", json::Value::object({{"type", json::Value::string("noul")}})}})}});
}

DecisionQueue::DecisionQueue(Factory factory, std::size_t capacity, json::Value warmup)
    : capacity_(capacity < 1 ? 1 : capacity),
      factory_(std::move(factory)),
      warmup_(std::move(warmup)) {}

void DecisionQueue::start() {
  std::lock_guard join_lock(join_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (thread_.joinable() || closing_) return;
  }
  thread_ = std::thread([this, f = std::move(factory_), w = std::move(warmup_)]() mutable {
    run(std::move(f), std::move(w));
  });
}

DecisionQueue::~DecisionQueue() {
  drain();
}

cache::StateCacheStats DecisionQueue::state_cache_stats() const {
  std::lock_guard lock(mutex_);
  return cache_stats_;
}

PreparedRequest DecisionQueue::prepare(json::Value body, const Cancellation& cancellation,
                                       const util::MemoryCharge& charge) {
  std::shared_ptr<const Preparer> preparer;
  {
    std::lock_guard lock(mutex_);
    if (state_ != QueueState::ready || !preparer_) throw unavailable_error(state_);
    preparer = preparer_;  // a share: it outlives the runner while this prepares
  }
  return preparer->prepare(std::move(body), cancellation, charge);
}

std::future<DecisionOutcome> DecisionQueue::submit(PreparedRequest prepared) {
  std::lock_guard lock(mutex_);
  if (state_ != QueueState::ready) throw unavailable_error(state_);
  if (jobs_.size() >= capacity_) {
    throw Error(
        ErrorKind::overloaded, "queue_full",
        "the decision queue is full (" + std::to_string(capacity_) + " waiting); retry shortly");
  }
  Job job{std::move(prepared), {}, Clock::now()};
  auto future = job.promise.get_future();
  jobs_.push_back(std::move(job));
  work_cv_.notify_one();
  return future;
}

std::vector<DecisionQueue::Job> DecisionQueue::take_cancelled() {
  std::vector<Job> gone;
  const auto kept = std::stable_partition(jobs_.begin(), jobs_.end(), [](const Job& j) {
    return !j.prepared.cancellation.requested();
  });
  std::move(kept, jobs_.end(), std::back_inserter(gone));
  jobs_.erase(kept, jobs_.end());
  return gone;
}

void DecisionQueue::drop(std::vector<Job> jobs) {
  const auto now = Clock::now();
  for (Job& job : jobs) {
    DecisionOutcome dropped;
    dropped.status = DecisionOutcome::Status::dropped;
    dropped.queue_wait_ms = ms_between(job.submitted, now);
    job.promise.set_value(std::move(dropped));
  }
}

void DecisionQueue::withdraw_cancelled() {
  std::vector<Job> gone;
  {
    std::lock_guard lock(mutex_);
    gone = take_cancelled();
  }
  drop(std::move(gone));
}

void DecisionQueue::drain() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    if (state_ == QueueState::ready || state_ == QueueState::loading) {
      // A loading queue finishes loading first (llama.cpp cannot be interrupted cleanly), then
      // sees closing_ and stops.
      if (state_ == QueueState::ready) state_ = QueueState::draining;
    }
    work_cv_.notify_all();
    state_cv_.notify_all();
  }
  std::lock_guard join_lock(join_mutex_);
  if (thread_.joinable()) {
    thread_.join();
  } else {
    std::lock_guard lock(mutex_);
    if (state_ != QueueState::failed) state_ = QueueState::stopped;  // never started
    state_cv_.notify_all();
  }
}

bool DecisionQueue::wait_until_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  state_cv_.wait_for(lock, timeout, [this] { return state_ != QueueState::loading; });
  return state_ == QueueState::ready;
}

QueueState DecisionQueue::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

std::optional<ServedModel> DecisionQueue::served() const {
  std::lock_guard lock(mutex_);
  return served_;
}

std::string DecisionQueue::load_error() const {
  std::lock_guard lock(mutex_);
  return load_error_;
}

std::size_t DecisionQueue::depth() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

int DecisionQueue::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

std::optional<double> DecisionQueue::slot_wait_ms() const {
  std::lock_guard lock(mutex_);
  if (!recent_decision_ms_) return std::nullopt;
  return *recent_decision_ms_ / std::max(1, parallel_);
}

void DecisionQueue::note_decision_time(double ms) {
  recent_decision_ms_ =
      recent_decision_ms_ ? kRecentWeight * ms + (1 - kRecentWeight) * *recent_decision_ms_ : ms;
}

void DecisionQueue::run(Factory factory, json::Value warmup) {
  // The Runner is created, used and destroyed on this thread only.
  Engine engine = load(factory, warmup);
  if (engine.runner) serve(*engine.runner);
  {
    std::lock_guard lock(mutex_);
    if (state_ != QueueState::failed) state_ = QueueState::stopped;  // failed stays failed
    preparer_.reset();  // no new prepare() starts; one under way keeps its share
    cache_stats_ = {};
    state_cv_.notify_all();
  }
  engine = {};
}

Engine DecisionQueue::load(const Factory& factory, const json::Value& warmup) {
  auto start = Clock::now();
  Engine engine;
  std::string error;
  try {
    engine = factory();
    if (!engine.preparer || !engine.runner)
      throw model_error("the model factory returned no engine");
    engine.decide(warmup);
  } catch (const std::exception& e) {
    error = e.what();
    engine = {};
  }
  std::lock_guard lock(mutex_);
  if (!engine.runner) {
    load_error_ = error.empty() ? "unknown error" : error;
    state_ = QueueState::failed;
  } else {
    served_ = engine.served();
    served_->load_seconds = ms_between(start, Clock::now()) / 1000.0;
    preparer_ = engine.preparer;
    cache_stats_ = engine.runner->state_cache_stats();
    state_ = closing_ ? QueueState::draining : QueueState::ready;
  }
  state_cv_.notify_all();
  return engine;
}

void DecisionQueue::serve(Runner& runner) {
  DecisionLoop loop(runner);
  {
    std::lock_guard lock(mutex_);
    parallel_ = loop.slots();
  }
  std::map<DecisionLoop::Ticket, Job> started;  // in the loop, by ticket
  DecisionLoop::Ticket next_ticket = 0;
  // What left the loop: its place is given back, then its promise is set.
  auto settle = [&](std::vector<DecisionLoop::Finished> left) {
    if (left.empty()) return;
    {
      std::lock_guard lock(mutex_);
      in_flight_ = loop.in_flight();
      cache_stats_ = runner.state_cache_stats();  // published with the results
      for (const auto& f : left) {
        if (f.outcome.status == DecisionOutcome::Status::decided) {
          note_decision_time(f.outcome.decision_ms);
        }
      }
    }
    for (auto& f : left) {
      const auto it = started.find(f.ticket);
      f.outcome.queue_wait_ms = it->second.queue_wait_ms;
      it->second.promise.set_value(std::move(f.outcome));
      started.erase(it);
    }
  };
  while (true) {
    // The plan of what begins, is suspended or resumed, made under the lock with the queue as it
    // is; the waiting requests that begin leave the queue at once.
    Admission plan;
    std::vector<std::pair<DecisionLoop::Ticket, PreparedRequest>> joining;
    std::vector<Job> gone;
    {
      std::unique_lock lock(mutex_);
      if (loop.empty()) {
        if (jobs_.empty() && !closing_) {
          // Nothing waits (and the last request is gone): the runner may tidy up now.
          lock.unlock();
          runner.idle();
          lock.lock();
        }
        work_cv_.wait(lock, [this] { return !jobs_.empty() || closing_; });
        if (jobs_.empty()) return;  // closing_ and nothing left: drained
      }
      // Requests whose clients left wait for nothing: they neither begin nor make a long
      // decision give way.
      gone = take_cancelled();
      const std::optional<Clock::time_point> since = loop.suspended_since();
      std::vector<WaitingRequest> waiting;
      waiting.reserve(jobs_.size());
      for (const Job& j : jobs_) {
        waiting.push_back({j.prepared.input_tokens(), since && j.submitted <= *since});
      }
      plan = loop.plan(waiting);
      const auto now = Clock::now();
      for (std::size_t i : plan.begin) {
        Job& job = jobs_[i];
        const DecisionLoop::Ticket ticket = next_ticket++;
        job.queue_wait_ms = ms_between(job.submitted, now);
        joining.emplace_back(ticket, std::move(job.prepared));
        started.emplace(ticket, std::move(job));
      }
      for (auto i = plan.begin.rbegin(); i != plan.begin.rend(); ++i) {
        jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(*i));
      }
      // Counted in flight from here: the running ones and those that begin now.
      in_flight_ = loop.in_flight() + static_cast<int>(joining.size()) - (plan.suspend ? 1 : 0) +
                   (plan.resume ? 1 : 0);
    }
    drop(std::move(gone));
    settle(loop.admit(plan, std::move(joining)));
    settle(loop.step());
  }
}

}  // namespace clef::runtime
