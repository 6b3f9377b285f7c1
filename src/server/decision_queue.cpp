#include "server/decision_queue.hpp"

#include <algorithm>
#include <limits>
#include <list>
#include <optional>

#include "runtime/scheduler.hpp"

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
  const int slots = std::max(1, decider.parallel());
  {
    std::lock_guard lock(mutex_);
    parallel_ = slots;
  }
  struct Active {
    Job job;
    std::unique_ptr<runtime::DecisionInProgress> decision;
    Clock::time_point taken;
    int steps_out = 0;     ///< steps in a row it sat out for shorter ones
    bool stepped = false;  ///< advanced since it began or resumed
    bool suspended = false;
    Clock::time_point suspended_at;
  };
  std::list<Active> active;  // a list: an element never moves while its decision is in progress
  auto view = [&active] {
    std::vector<runtime::RunningDecision> running;
    for (const Active& a : active) {
      running.push_back({a.job.prepared.input_tokens(), a.decision->tokens_left(), a.steps_out,
                         a.stepped, a.suspended, a.job.prepared.cancellation.requested()});
    }
    return running;
  };
  auto nth = [&active](std::size_t i) { return std::next(active.begin(), static_cast<long>(i)); };
  // Counted in flight: the decisions not suspended (a long one suspended for shorter ones counts
  // once). A request leaves the count before its promise is set.
  auto count_in_flight = [this, &active] {
    std::lock_guard lock(mutex_);
    in_flight_ = static_cast<int>(
        std::count_if(active.begin(), active.end(), [](const Active& a) { return !a.suspended; }));
  };
  // What became of `it`: its place is given back, then its promise is set.
  auto settle = [&](std::list<Active>::iterator it, DecisionOutcome outcome) {
    Active& a = *it;
    outcome.queue_wait_ms = ms_between(a.job.submitted, a.taken);
    outcome.decision_ms = ms_between(a.taken, Clock::now()) - outcome.decision.timings.paused_ms;
    a.decision.reset();
    Job job = std::move(a.job);
    active.erase(it);
    {
      std::lock_guard lock(mutex_);
      if (outcome.status == DecisionOutcome::Status::decided) {
        note_decision_time(outcome.decision_ms);
      }
    }
    count_in_flight();
    job.promise.set_value(std::move(outcome));
  };
  while (true) {
    // The plan of what begins, is suspended or resumed, made under the lock with the queue as it
    // is; the waiting requests that begin leave the queue at once.
    std::vector<Job> joining;
    std::optional<std::size_t> suspend;
    std::optional<std::size_t> resume;
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
      const auto since =
          std::find_if(active.begin(), active.end(), [](const Active& a) { return a.suspended; });
      std::vector<runtime::WaitingRequest> waiting;
      for (const Job& j : jobs_) {
        waiting.push_back({j.prepared.input_tokens(),
                           since != active.end() && j.submitted <= since->suspended_at});
      }
      const runtime::Admission plan = runtime::plan_admission(slots, view(), waiting);
      suspend = plan.suspend;
      resume = plan.resume;
      for (std::size_t i : plan.begin) joining.push_back(std::move(jobs_[i]));
      for (auto i = plan.begin.rbegin(); i != plan.begin.rend(); ++i) {
        jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(*i));
      }
    }
    try {
      if (suspend) {
        Active& a = *nth(*suspend);
        decider.suspend(*a.decision);
        a.suspended = true;
        a.suspended_at = Clock::now();
      }
      if (resume) {
        Active& a = *nth(*resume);
        decider.resume(*a.decision);
        a.suspended = false;
        a.stepped = false;
      }
    } catch (...) {
      // The backbone could not keep or set back a memory: that decision is lost, told why.
      DecisionOutcome failed;
      take_current_exception(failed);
      settle(nth(suspend ? *suspend : *resume), std::move(failed));
    }
    for (Job& job : joining) {
      const auto taken = Clock::now();
      if (job.prepared.cancellation.requested()) {
        DecisionOutcome dropped;
        dropped.status = DecisionOutcome::Status::dropped;
        dropped.queue_wait_ms = ms_between(job.submitted, taken);
        job.promise.set_value(std::move(dropped));
        continue;
      }
      // In place first: the decision refers to its prepared request, which must not move.
      Active& a = active.emplace_back();
      a.job = std::move(job);
      a.taken = taken;
      try {
        a.decision = decider.begin(a.job.prepared);
      } catch (...) {
        DecisionOutcome failed;
        take_current_exception(failed);
        settle(std::prev(active.end()), std::move(failed));
      }
    }
    count_in_flight();
    const runtime::StepPlan step = runtime::plan_step(slots, view());
    std::vector<runtime::DecisionInProgress*> advancing;
    for (std::size_t i = 0; i < active.size(); ++i) {
      const bool goes =
          std::find(step.advance.begin(), step.advance.end(), i) != step.advance.end();
      Active& a = *nth(i);
      if (a.suspended) continue;
      if (!goes) {
        ++a.steps_out;
        continue;
      }
      a.steps_out = 0;
      a.stepped = true;
      advancing.push_back(a.decision.get());
    }
    try {
      if (!advancing.empty()) decider.step(advancing, step.most_tokens);
    } catch (...) {
      // The backbone failed: every decision of this step is lost, each told why (a suspended one
      // keeps its memory aside and goes on).
      for (auto it = active.begin(); it != active.end();) {
        auto next = std::next(it);
        if (!it->suspended) {
          DecisionOutcome failed;
          take_current_exception(failed);
          settle(it, std::move(failed));
        }
        it = next;
      }
    }
    for (auto it = active.begin(); it != active.end();) {
      auto next = std::next(it);
      if (!it->suspended && it->decision->prefilled()) {
        DecisionOutcome outcome;
        try {
          outcome.decision = decider.finish(*it->decision);
          outcome.status = DecisionOutcome::Status::decided;
        } catch (...) {
          take_current_exception(outcome);
        }
        settle(it, std::move(outcome));
      }
      it = next;
    }
  }
}

}  // namespace clef::server
