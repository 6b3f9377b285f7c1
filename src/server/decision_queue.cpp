#include "server/decision_queue.hpp"

#include <algorithm>
#include <limits>
#include <list>

#include "util/error.hpp"

namespace clef::server {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Inside a catch handler: `outcome` takes the exception being handled, as cancelled (a
/// DecisionCancelled: the client has gone) or failed.
void take_current_exception(DecisionOutcome& outcome) {
  try {
    throw;
  } catch (const DecisionCancelled&) {
    outcome.status = DecisionOutcome::Status::cancelled;
  } catch (...) {
    outcome.status = DecisionOutcome::Status::failed;
  }
  outcome.error = std::current_exception();
}

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
  // Under the lock the decider cannot go away: the runtime thread clears decider_ under it first.
  std::lock_guard lock(mutex_);
  return decider_ != nullptr ? decider_->state_cache_stats() : cache::StateCacheStats{};
}

runtime::PreparedRequest DecisionQueue::prepare(const json::Value& body,
                                                const runtime::Cancellation& cancellation) {
  const runtime::Decider* decider = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (state_ != QueueState::ready || decider_ == nullptr) throw unavailable_error(state_);
    decider = decider_;
    ++preparing_;
  }
  // The runtime thread keeps the decider alive until no prepare() uses it (see run()).
  struct Leave {
    DecisionQueue& queue;
    ~Leave() {
      std::lock_guard lock(queue.mutex_);
      if (--queue.preparing_ == 0) queue.state_cv_.notify_all();
    }
  } leave{*this};
  return decider->prepare(body, cancellation);
}

std::future<DecisionOutcome> DecisionQueue::submit(runtime::PreparedRequest prepared) {
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

std::optional<ModelInfo> DecisionQueue::model() const {
  std::lock_guard lock(mutex_);
  return model_;
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
  // The Decider is created, used and destroyed on this thread only.
  std::unique_ptr<runtime::Decider> decider = load(factory, warmup);
  if (decider) serve(*decider);
  std::unique_lock lock(mutex_);
  if (state_ != QueueState::failed) state_ = QueueState::stopped;  // failed stays failed
  decider_ = nullptr;                                              // no new prepare() starts
  state_cv_.notify_all();
  state_cv_.wait(lock, [this] { return preparing_ == 0; });  // nor runs, when it is destroyed
  lock.unlock();
  decider.reset();
}

std::unique_ptr<runtime::Decider> DecisionQueue::load(const Factory& factory,
                                                      const json::Value& warmup) {
  auto start = Clock::now();
  std::unique_ptr<runtime::Decider> decider;
  std::string error;
  try {
    decider = factory();
    if (!decider) throw model_error("the model factory returned no decider");
    decider->decide(warmup);
  } catch (const std::exception& e) {
    error = e.what();
    decider.reset();
  }
  std::lock_guard lock(mutex_);
  if (!decider) {
    load_error_ = error.empty() ? "unknown error" : error;
    state_ = QueueState::failed;
  } else {
    model_ = ModelInfo{decider->model_name(),
                       decider->context_size(),
                       ms_between(start, Clock::now()) / 1000.0,
                       decider->limits(),
                       decider->answer_settings(),
                       decider->placement(),
                       decider->sequence_memory()};
    decider_ = decider.get();
    state_ = closing_ ? QueueState::draining : QueueState::ready;
  }
  state_cv_.notify_all();
  return decider;
}

void DecisionQueue::serve(runtime::Decider& decider) {
  {
    std::lock_guard lock(mutex_);
    parallel_ = decider.parallel();
  }
  if (decider.parallel() > 1) return serve_batched(decider);
  while (true) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      if (jobs_.empty() && !closing_) {
        // Nothing waits (and the last request is gone): the decider may tidy up now.
        lock.unlock();
        decider.idle();
        lock.lock();
      }
      work_cv_.wait(lock, [this] { return !jobs_.empty() || closing_; });
      if (jobs_.empty()) return;  // closing_ and nothing left: drained
      job = std::move(jobs_.front());
      jobs_.pop_front();
      in_flight_ = 1;
    }
    DecisionOutcome outcome = decide_one(decider, job, true);
    {
      std::lock_guard lock(mutex_);
      in_flight_ = 0;
      if (outcome.status == DecisionOutcome::Status::decided) {
        note_decision_time(outcome.decision_ms);
      }
    }
    job.promise.set_value(std::move(outcome));
  }
}

void DecisionQueue::serve_batched(runtime::Decider& decider) {
  struct Active {
    Job job;
    std::unique_ptr<runtime::DecisionInProgress> decision;
    Clock::time_point taken;
    int steps_out = 0;  ///< steps in a row it sat out for shorter ones
  };
  const auto most = static_cast<std::size_t>(decider.parallel());
  std::list<Active> active;  // a list: an element never moves while its decision is in progress
  // A request taken from the queue leaves the batch (no longer counted in flight) before its
  // promise is set.
  auto leave = [this] {
    std::lock_guard lock(mutex_);
    --in_flight_;
  };
  // What became of `a`: its place is given back, then its promise is set.
  auto settle = [this, &leave](Active& a, DecisionOutcome outcome) {
    outcome.queue_wait_ms = ms_between(a.job.submitted, a.taken);
    outcome.decision_ms = ms_between(a.taken, Clock::now());
    a.decision.reset();
    if (outcome.status == DecisionOutcome::Status::decided) {
      std::lock_guard lock(mutex_);
      note_decision_time(outcome.decision_ms);
    }
    leave();
    a.job.promise.set_value(std::move(outcome));
  };
  while (true) {
    std::vector<Job> joining;
    {
      std::unique_lock lock(mutex_);
      if (active.empty()) {
        if (jobs_.empty() && !closing_) {
          lock.unlock();
          decider.idle();  // nothing waits and nothing is in progress
          lock.lock();
        }
        work_cv_.wait(lock, [this] { return !jobs_.empty() || closing_; });
        if (jobs_.empty()) return;  // closing_ and nothing left: drained
      }
      // New requests join at a step boundary, in arrival order, while places are free.
      while (!jobs_.empty() && active.size() + joining.size() < most) {
        joining.push_back(std::move(jobs_.front()));
        jobs_.pop_front();
      }
      in_flight_ = static_cast<int>(active.size() + joining.size());
    }
    for (Job& job : joining) {
      const auto taken = Clock::now();
      if (job.prepared.cancellation.requested()) {
        DecisionOutcome dropped;
        dropped.status = DecisionOutcome::Status::dropped;
        dropped.queue_wait_ms = ms_between(job.submitted, taken);
        leave();
        job.promise.set_value(std::move(dropped));
        continue;
      }
      // In place first: the decision refers to its prepared request, which must not move.
      Active& a = active.emplace_back(Active{std::move(job), nullptr, taken, 0});
      try {
        a.decision = decider.begin(a.job.prepared);
      } catch (...) {
        DecisionOutcome failed;
        take_current_exception(failed);
        settle(a, std::move(failed));
        active.pop_back();
      }
    }
    // Shortest first: a decision sits this step out while another has at most half its tokens
    // left (is_much_shorter, as a paused prefill in serve()), so a short request is not slowed by
    // a long one's pieces; after kMostStepsOut steps out in a row it goes anyway (no starvation).
    int fewest = std::numeric_limits<int>::max();
    for (const Active& a : active) fewest = std::min(fewest, a.decision->tokens_left());
    std::vector<runtime::DecisionInProgress*> step;
    for (Active& a : active) {
      // One whose client has gone steps anyway: the step stops it and gives its place back.
      if (is_much_shorter(fewest, a.decision->tokens_left()) && a.steps_out < kMostStepsOut &&
          !a.job.prepared.cancellation.requested()) {
        ++a.steps_out;
        continue;
      }
      a.steps_out = 0;
      step.push_back(a.decision.get());
    }
    try {
      if (!step.empty()) decider.step(step);
    } catch (...) {
      // The backbone failed: every decision of this step is lost, each told why.
      for (Active& a : active) {
        DecisionOutcome failed;
        take_current_exception(failed);
        settle(a, std::move(failed));
      }
      active.clear();
    }
    for (auto it = active.begin(); it != active.end();) {
      if (!it->decision->prefilled()) {
        ++it;
        continue;
      }
      DecisionOutcome outcome;
      try {
        outcome.decision = decider.finish(*it->decision);
        outcome.status = DecisionOutcome::Status::decided;
      } catch (...) {
        take_current_exception(outcome);
      }
      settle(*it, std::move(outcome));
      it = active.erase(it);
    }
  }
}

DecisionOutcome DecisionQueue::decide_one(runtime::Decider& decider, Job& job, bool preemptible) {
  DecisionOutcome outcome;
  auto taken = Clock::now();
  outcome.queue_wait_ms = ms_between(job.submitted, taken);
  if (job.prepared.cancellation.requested()) {
    outcome.status = DecisionOutcome::Status::dropped;
    return outcome;
  }
  double paused_ms = 0;
  try {
    if (preemptible) {
      const int size = job.prepared.input_tokens();
      backbone::Preemption preemption;
      preemption.wanted = [this, size] {
        std::lock_guard lock(mutex_);
        return std::any_of(jobs_.begin(), jobs_.end(), [size](const Job& j) {
          return is_much_shorter(j.prepared.input_tokens(), size);
        });
      };
      preemption.run_others = [this, &decider, size] { run_shorter(decider, size); };
      outcome.decision = decider.decide(job.prepared, preemption);
    } else {
      outcome.decision = decider.decide(job.prepared);
    }
    paused_ms = outcome.decision.timings.paused_ms;
    outcome.status = DecisionOutcome::Status::decided;
  } catch (...) {
    take_current_exception(outcome);
  }
  outcome.decision_ms = ms_between(taken, Clock::now()) - paused_ms;
  return outcome;
}

void DecisionQueue::run_shorter(runtime::Decider& decider, int running_tokens) {
  const auto since = Clock::now();
  while (true) {
    Job job;
    {
      std::lock_guard lock(mutex_);
      const auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const Job& j) {
        return j.submitted <= since && is_much_shorter(j.prepared.input_tokens(), running_tokens);
      });
      if (it == jobs_.end()) return;
      job = std::move(*it);
      jobs_.erase(it);
    }
    DecisionOutcome outcome = decide_one(decider, job, false);
    if (outcome.status == DecisionOutcome::Status::decided) {
      std::lock_guard lock(mutex_);
      note_decision_time(outcome.decision_ms);
    }
    job.promise.set_value(std::move(outcome));
  }
}

}  // namespace clef::server
