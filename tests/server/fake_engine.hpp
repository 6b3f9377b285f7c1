#pragma once
// A test double of the engine (runtime::Engine: a FakePreparer and a FakeRunner): deterministic
// answers computed from the request, an optional delay, an optional gate that holds a decision
// until the test opens it, and checks that deciding is never entered by two threads at once. One
// sequence; a decision is made whole in its first step(), so the loop never suspends one.
//
// Behaviour by request:
//   - prepare(): request::parse_request's refusals (e.g. `questions` missing or not a non-empty
//     object -> clef::invalid_request naming "questions"), before anything queues;
//   - state "boom"     -> std::runtime_error (an internal fault, 500);
//   - state "too-long" -> clef::Error payload_too_large "context_length_exceeded" (413);
//   - state "forever"  -> runs until its cancellation says so, counts it in
//     FakeControl::cancelled and throws clef::DecisionCancelled; gives up after 10 s (answers);
//   - otherwise every question gets {"type":"noul","noul":p} with p from an FNV-1a hash of the
//     request's canonical JSON and the question id, input_tokens = canonical size / 4 + 1.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

#include "json/render.hpp"
#include "request/parse.hpp"
#include "runtime/make_engine.hpp"
#include "util/error.hpp"

namespace clef::server::testing {

/// Shared between a test and the fakes it creates (the server owns the runner itself).
struct FakeControl {
  std::chrono::milliseconds delay{0};
  std::atomic<int> started{0};  ///< decisions entered (warm-up included)
  std::atomic<int> finished{0};
  std::atomic<int> active{0};
  std::atomic<bool> overlapped{false};  ///< two decisions ran at once
  std::atomic<int> cancelled{0};        ///< decisions stopped by their cancellation check
  std::mutex mutex;
  std::condition_variable cv;
  bool gate_open = true;
  bool load_gate_open = true;         ///< factory waits for this
  std::set<std::thread::id> threads;  ///< threads decisions ran on

  void close_gate() {
    std::lock_guard lock(mutex);
    gate_open = false;
  }
  void open_gate() {
    std::lock_guard lock(mutex);
    gate_open = true;
    cv.notify_all();
  }
  void open_load_gate() {
    std::lock_guard lock(mutex);
    load_gate_open = true;
    cv.notify_all();
  }
  /// Waits until `n` decide() calls have started; false after 10 s.
  bool wait_started(int n) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < n) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
};

inline std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// Prepares like the engine (request::parse_request with this model's name as the default).
/// The fake keeps the body's canonical JSON, which its answers hash, in the record's
/// rendered_state (it has no tokenizer, so no real record).
class FakePreparer final : public runtime::Preparer {
 public:
  FakePreparer(std::string name, int context_size) {
    served_.name = std::move(name);
    served_.context_size = context_size;
    served_.limits.context_size = context_size;
  }
  runtime::PreparedRequest prepare(json::Value body, const runtime::Cancellation& cancellation = {},
                                   const util::MemoryCharge& = {}) const override {
    runtime::PreparedRequest prepared;
    prepared.cancellation = cancellation;
    prepared.request = request::parse_request(body, {}, served_.name);
    json::Value defaulted = body;  // the canonical form has the model defaulted
    if (body.find("model") == nullptr) {
      defaulted.set("model", json::Value::string(prepared.request.model));
    }
    prepared.record.rendered_state = json::dumps(defaulted);
    return prepared;
  }
  const runtime::ServedModel& served() const override { return served_; }

 private:
  runtime::ServedModel served_;
};

/// Decides what FakePreparer prepared, each decision whole in its first step().
class FakeRunner final : public runtime::Runner {
 public:
  FakeRunner(std::shared_ptr<FakeControl> control, int context_size)
      : control_(std::move(control)), context_size_(context_size) {}

  std::unique_ptr<runtime::DecisionInProgress> begin(
      const runtime::PreparedRequest& prepared) override {
    return std::make_unique<Whole>(prepared);
  }
  void step(const StepOrders& orders) override {
    for (runtime::DecisionInProgress* d : orders.advance) {
      auto& whole = static_cast<Whole&>(*d);
      try {
        whole.decision = decide_whole(whole.prepared);
      } catch (...) {
        whole.error = std::current_exception();
      }
    }
  }
  runtime::Decision finish(runtime::DecisionInProgress& d) override {
    auto& whole = static_cast<Whole&>(d);
    if (whole.error) std::rethrow_exception(whole.error);
    return std::move(*whole.decision);
  }
  /// Counts its decisions as state-cache hits, noting the thread that asks (control.threads).
  cache::StateCacheStats state_cache_stats() const override {
    std::lock_guard lock(control_->mutex);
    control_->threads.insert(std::this_thread::get_id());
    cache::StateCacheStats stats;
    stats.hits = static_cast<std::uint64_t>(control_->finished.load());
    return stats;
  }
  void suspend(runtime::DecisionInProgress&) override {
    throw Error(ErrorKind::internal, "internal", "the fake runner does not suspend");
  }
  void resume(runtime::DecisionInProgress&) override {
    throw Error(ErrorKind::internal, "internal", "the fake runner does not suspend");
  }

 private:
  /// A decision made whole in its first step.
  struct Whole final : runtime::DecisionInProgress {
    explicit Whole(const runtime::PreparedRequest& p) : prepared(p) {}
    bool prefilled() const override { return decision || error; }
    int tokens_left() const override { return prefilled() ? 0 : prepared.input_tokens(); }
    int images_left() const override { return 0; }
    bool prefilling() const override { return false; }
    std::optional<std::chrono::steady_clock::time_point> suspended_at() const override {
      return std::nullopt;  // the fake runner never suspends
    }
    const runtime::PreparedRequest& prepared;
    std::optional<runtime::Decision> decision;
    std::exception_ptr error;
  };

  runtime::Decision decide_whole(const runtime::PreparedRequest& prepared) {
    if (is_state(prepared, "forever")) return decide_until_cancelled(prepared);
    if (control_->active.fetch_add(1) != 0) control_->overlapped = true;
    control_->started.fetch_add(1);
    struct Leave {
      FakeControl& c;
      ~Leave() {
        c.active.fetch_sub(1);
        c.finished.fetch_add(1);
      }
    } leave{*control_};
    {
      std::unique_lock lock(control_->mutex);
      control_->threads.insert(std::this_thread::get_id());
      control_->cv.wait(lock, [this] { return control_->gate_open; });
    }
    if (control_->delay.count() > 0) std::this_thread::sleep_for(control_->delay);
    return answer(prepared);
  }

  static bool is_state(const runtime::PreparedRequest& prepared, const char* state) {
    const json::Value& s = prepared.request.state;
    return s.is_string() && s.as_string() == state;
  }

  runtime::Decision decide_until_cancelled(const runtime::PreparedRequest& prepared) {
    control_->started.fetch_add(1);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      if (prepared.cancellation.requested()) {
        control_->cancelled.fetch_add(1);
        control_->finished.fetch_add(1);
        throw DecisionCancelled("cancelled");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    control_->finished.fetch_add(1);
    return answer(prepared);
  }

  runtime::Decision answer(const runtime::PreparedRequest& prepared) const {
    if (is_state(prepared, "boom")) throw std::runtime_error("fake decider exploded");
    if (is_state(prepared, "too-long")) {
      throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                  "record needs 99999 tokens; the context is " + std::to_string(context_size_),
                  "state");
    }
    const std::string& canonical = prepared.record.rendered_state;
    std::vector<json::Value::Member> answers;
    for (const request::Question& question : prepared.request.questions) {
      const std::string& id = question.id;
      double p = static_cast<double>(fnv1a(canonical + "/" + id) % 10001) / 10000.0;
      answers.emplace_back(id, json::Value::object({{"type", json::Value::string("noul")},
                                                    {"noul", json::Value::floating(p)}}));
    }
    runtime::Decision decision;
    decision.input_tokens = static_cast<int>(canonical.size() / 4 + 1);
    decision.response = json::Value::object({
        {"model", json::Value::string(prepared.request.model)},
        {"answers", json::Value::object(std::move(answers))},
        {"usage", json::Value::object(
                      {{"input_tokens", json::Value::integer(std::int64_t{decision.input_tokens})},
                       {"output_tokens", json::Value::integer(std::int64_t{0})}})},
    });
    decision.body = json::dumps_unsorted(decision.response);
    return decision;
  }

  std::shared_ptr<FakeControl> control_;
  int context_size_;
};

/// A fake engine: FakePreparer named `name` and a FakeRunner over `control`.
inline runtime::Engine fake_engine(std::shared_ptr<FakeControl> control,
                                   std::string name = "fake-model", int context_size = 4096) {
  return {std::make_shared<const FakePreparer>(std::move(name), context_size),
          std::make_unique<FakeRunner>(std::move(control), context_size)};
}

/// A DecisionQueue::Factory making fake engines; waits for control->load_gate_open first.
inline auto fake_factory(std::shared_ptr<FakeControl> control, std::string name = "fake-model",
                         int context_size = 4096) {
  return [control, name, context_size]() -> runtime::Engine {
    {
      std::unique_lock lock(control->mutex);
      control->cv.wait(lock, [&] { return control->load_gate_open; });
    }
    return fake_engine(control, name, context_size);
  };
}

}  // namespace clef::server::testing
