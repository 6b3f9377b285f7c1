// DecisionQueue: loading, warm-up, order, bounded capacity, drain, failures, dropped clients, and
// that the Runner only ever runs on the one runtime thread, one call at a time.

#include "runtime/loop/decision_queue.hpp"

#include <gtest/gtest.h>

#include "json/parse.hpp"
#include "server/fake_engine.hpp"

namespace clef::runtime {
namespace {

using server::testing::fake_factory;
using server::testing::FakeControl;
using namespace std::chrono_literals;

/// Prepares `body` on this thread and queues it, as the server's HTTP threads do; `gone` (optional)
/// is the cancellation probe.
std::future<DecisionOutcome> submit(DecisionQueue& queue, const json::Value& body,
                                    std::function<bool()> gone = {}) {
  runtime::PreparedRequest prepared = queue.prepare(body);
  if (gone) prepared.cancellation = runtime::Cancellation::polling(std::move(gone));
  return queue.submit(std::move(prepared));
}

json::Value request_with_state(const std::string& state) {
  return json::parse(R"({"state":")" + state + R"(","questions":{"q":{"type":"noul"}}})");
}

TEST(DecisionQueue, LoadsThenWarmsUpThenIsReady) {
  auto control = std::make_shared<FakeControl>();
  control->load_gate_open = false;
  DecisionQueue queue(fake_factory(control, "m", 512), 4, warmup_request());
  queue.start();
  EXPECT_EQ(queue.state(), QueueState::loading);
  EXPECT_FALSE(queue.served().has_value());
  EXPECT_THROW(submit(queue, request_with_state("x")), Error);
  control->open_load_gate();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  EXPECT_EQ(control->finished.load(), 1);  // the warm-up decision ran before ready
  ASSERT_TRUE(queue.served().has_value());
  EXPECT_EQ(queue.served()->name, "m");
  EXPECT_EQ(queue.served()->context_size, 512);
  EXPECT_GE(queue.served()->load_seconds, 0.0);
}

TEST(DecisionQueue, SubmitWhileLoadingIsUnavailable) {
  auto control = std::make_shared<FakeControl>();
  control->load_gate_open = false;
  DecisionQueue queue(fake_factory(control), 4, warmup_request());
  queue.start();
  try {
    submit(queue, request_with_state("x"));
    FAIL() << "submit while loading must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_EQ(e.code(), "model_loading");
  }
  control->open_load_gate();
}

TEST(DecisionQueue, AnswersEqualTheEnginesAnswersInOrder) {
  auto control = std::make_shared<FakeControl>();
  DecisionQueue queue(fake_factory(control), 16, warmup_request());
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  runtime::Engine reference = server::testing::fake_engine(control);
  std::vector<std::future<DecisionOutcome>> futures;
  for (int i = 0; i < 8; ++i)
    futures.push_back(submit(queue, request_with_state(std::to_string(i))));
  for (int i = 0; i < 8; ++i) {
    DecisionOutcome outcome = futures[i].get();
    ASSERT_EQ(outcome.status, DecisionOutcome::Status::decided);
    EXPECT_EQ(outcome.decision.body, reference.decide(request_with_state(std::to_string(i))).body);
    EXPECT_GE(outcome.queue_wait_ms, 0.0);
  }
}

TEST(DecisionQueue, FullQueueRefusesWithQueueFull) {
  auto control = std::make_shared<FakeControl>();
  DecisionQueue queue(fake_factory(control), 2, warmup_request());
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  control->close_gate();
  auto running = submit(queue, request_with_state("a"));
  ASSERT_TRUE(control->wait_started(2));  // warm-up + "a" (held at the gate)
  EXPECT_EQ(queue.in_flight(), 1);
  auto waiting1 = submit(queue, request_with_state("b"));
  auto waiting2 = submit(queue, request_with_state("c"));
  EXPECT_EQ(queue.depth(), 2u);
  try {
    submit(queue, request_with_state("d"));
    FAIL() << "a third waiting request must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::overloaded);
    EXPECT_EQ(e.status(), 429);
    EXPECT_EQ(e.code(), "queue_full");
  }
  control->open_gate();
  EXPECT_EQ(running.get().status, DecisionOutcome::Status::decided);
  EXPECT_EQ(waiting1.get().status, DecisionOutcome::Status::decided);
  EXPECT_EQ(waiting2.get().status, DecisionOutcome::Status::decided);
  EXPECT_EQ(queue.depth(), 0u);
}

TEST(DecisionQueue, DrainFinishesQueuedAndRunningThenRefuses) {
  auto control = std::make_shared<FakeControl>();
  DecisionQueue queue(fake_factory(control), 8, warmup_request());
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  control->close_gate();
  std::vector<std::future<DecisionOutcome>> futures;
  for (int i = 0; i < 5; ++i)
    futures.push_back(submit(queue, request_with_state(std::to_string(i))));
  ASSERT_TRUE(control->wait_started(2));
  std::thread drainer([&] { queue.drain(); });
  // Draining: no new work, but what was queued still runs.
  auto until = std::chrono::steady_clock::now() + 5s;
  while (queue.state() != QueueState::draining && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(queue.state(), QueueState::draining);
  try {
    submit(queue, request_with_state("late"));
    FAIL() << "submit while draining must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_EQ(e.code(), "shutting_down");
  }
  control->open_gate();
  drainer.join();
  for (auto& f : futures) EXPECT_EQ(f.get().status, DecisionOutcome::Status::decided);
  EXPECT_EQ(queue.state(), QueueState::stopped);
  EXPECT_EQ(control->finished.load(), 6);
}

TEST(DecisionQueue, RunnerRunsOnOneThreadOneCallAtATime) {
  auto control = std::make_shared<FakeControl>();
  control->delay = 2ms;
  DecisionQueue queue(fake_factory(control), 64, warmup_request());
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  std::vector<std::thread> submitters;
  std::atomic<int> decided{0};
  for (int t = 0; t < 8; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        auto f = submit(queue, request_with_state(std::to_string(t * 10 + i)));
        if (f.get().status == DecisionOutcome::Status::decided) ++decided;
        // The counters the runtime thread published with this result: never a call into the
        // runner from here.
        EXPECT_GE(queue.state_cache_stats().hits, 2u);
      }
    });
  }
  for (auto& s : submitters) s.join();
  EXPECT_EQ(decided.load(), 32);
  EXPECT_EQ(queue.state_cache_stats().hits, 33u);  // the warm-up and the 32
  EXPECT_FALSE(control->overlapped.load());
  std::lock_guard lock(control->mutex);
  EXPECT_EQ(control->threads.size(), 1u);
  EXPECT_EQ(control->threads.count(std::this_thread::get_id()), 0u);
}

TEST(DecisionQueue, FactoryFailureIsReportedAndRefusesRequests) {
  DecisionQueue queue(
      []() -> runtime::Engine { throw model_error("backbone.gguf: not a GGUF file"); }, 4,
      warmup_request());
  queue.start();
  EXPECT_FALSE(queue.wait_until_ready(10s));
  EXPECT_EQ(queue.state(), QueueState::failed);
  EXPECT_NE(queue.load_error().find("not a GGUF file"), std::string::npos);
  EXPECT_THROW(submit(queue, request_with_state("x")), Error);
}

TEST(DecisionQueue, WarmUpFailureIsALoadFailure) {
  auto control = std::make_shared<FakeControl>();
  // A decider that rejects the warm-up (no questions accepted) fails the load.
  json::Value bad_warmup = json::parse(R"({"state":"x"})");
  DecisionQueue queue(fake_factory(control), 4, bad_warmup);
  queue.start();
  EXPECT_FALSE(queue.wait_until_ready(10s));
  EXPECT_NE(queue.load_error().find("questions"), std::string::npos);
}

TEST(DecisionQueue, RunnerErrorsComeBackAsFailedOutcomes) {
  auto control = std::make_shared<FakeControl>();
  DecisionQueue queue(fake_factory(control), 4, warmup_request());
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  // A request that cannot be decided is refused while it is prepared, before it queues.
  int before = control->started.load();
  try {
    submit(queue, json::parse(R"({"state":"x"})"));
    FAIL() << "a request without questions must be refused before it queues";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "questions");
    EXPECT_EQ(e.status(), 400);
  }
  EXPECT_EQ(control->started.load(), before);
  EXPECT_EQ(queue.depth(), 0u);
  DecisionOutcome outcome = submit(queue, request_with_state("boom")).get();
  ASSERT_EQ(outcome.status, DecisionOutcome::Status::failed);
  EXPECT_THROW(std::rethrow_exception(outcome.error), std::runtime_error);
  // The runtime thread survives both.
  EXPECT_EQ(submit(queue, request_with_state("ok")).get().status, DecisionOutcome::Status::decided);
}

TEST(DecisionQueue, GoneClientsAreDroppedWithoutDeciding) {
  auto control = std::make_shared<FakeControl>();
  DecisionQueue queue(fake_factory(control), 4, warmup_request());
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  int before = control->started.load();
  DecisionOutcome outcome = submit(queue, request_with_state("x"), [] { return true; }).get();
  EXPECT_EQ(outcome.status, DecisionOutcome::Status::dropped);
  EXPECT_EQ(control->started.load(), before);
  // A probe that throws keeps the request.
  outcome =
      submit(queue, request_with_state("x"), []() -> bool { throw std::runtime_error("x"); }).get();
  EXPECT_EQ(outcome.status, DecisionOutcome::Status::decided);
}

TEST(DecisionQueue, NothingLoadsBeforeStartAndAnUnstartedQueueDrainsAtOnce) {
  auto control = std::make_shared<FakeControl>();
  {
    DecisionQueue queue(fake_factory(control), 4, warmup_request());
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(queue.state(), QueueState::loading);
    EXPECT_EQ(control->started.load(), 0);
    queue.drain();
    EXPECT_EQ(queue.state(), QueueState::stopped);
    queue.start();  // too late: no-op
    EXPECT_EQ(control->started.load(), 0);
  }
  DecisionQueue queue(fake_factory(control), 4, warmup_request());
  queue.start();
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(10s));
  EXPECT_EQ(control->started.load(), 1);
}

}  // namespace
}  // namespace clef::runtime
