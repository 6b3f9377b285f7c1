// The one decision loop (runtime/loop/decision_loop.hpp) over the tiny test model: what it plans is
// carried out on a real engine, and every answer keeps the bytes of the request decided alone.

#include "runtime/loop/decision_loop.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "json/value.hpp"
#include "runtime/make_engine.hpp"
#include "support/batched_decisions.hpp"
#include "support/ticket_requests.hpp"
#include "support/ticket_text.hpp"
#include "support/tiny_engine_config.hpp"

namespace {

namespace rt = clef::runtime;
using clef::json::Value;
using Status = rt::DecisionOutcome::Status;

rt::EngineConfig config(int parallel) {
  rt::EngineConfig c = clef::test::tiny_engine_config();
  c.backbone.context_size = 4096;
  c.backbone.chunk_tokens = 64;
  c.backbone.parallel = parallel;
  c.state_cache_mb = 0;
  return c;
}

/// Requests waiting for the loop, in arrival order, each with its ticket.
struct Waiting {
  std::deque<std::pair<rt::DecisionLoop::Ticket, rt::PreparedRequest>> queue;

  /// Plans with what waits, hands the loop those the plan begins, returns what left.
  std::vector<rt::DecisionLoop::Finished> admit(rt::DecisionLoop& loop) {
    std::vector<rt::WaitingRequest> sizes;
    for (const auto& [ticket, prepared] : queue) sizes.push_back({prepared.input_tokens(), true});
    const rt::Admission plan = loop.plan(sizes);
    std::vector<std::pair<rt::DecisionLoop::Ticket, rt::PreparedRequest>> begin;
    for (std::size_t i : plan.begin) begin.push_back(std::move(queue[i]));
    for (auto i = plan.begin.rbegin(); i != plan.begin.rend(); ++i) {
      queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(*i));
    }
    return loop.admit(plan, std::move(begin));
  }
};

TEST(DecisionLoop, OneSlotSuspendsALongDecisionForAShortOneAndBothKeepTheirBytes) {
  auto engine = rt::make_engine(config(1));
  const Value long_body =
      clef::test::ticket_request(clef::test::ticket_words(600), clef::test::kTicketQuestionsA);
  const Value short_body =
      clef::test::ticket_request("Production database is down", clef::test::kTicketQuestionsB);
  const std::string long_alone = engine.decide(long_body).body;
  const std::string short_alone = engine.decide(short_body).body;

  rt::DecisionLoop loop(*engine.runner);
  ASSERT_EQ(loop.slots(), 1);
  Waiting waiting;
  waiting.queue.emplace_back(1, engine.prepare(long_body));
  EXPECT_TRUE(waiting.admit(loop).empty());
  EXPECT_TRUE(loop.step().empty());  // the long one's first piece
  waiting.queue.emplace_back(2, engine.prepare(short_body));
  EXPECT_TRUE(waiting.admit(loop).empty());  // suspends the long one, begins the short one
  ASSERT_TRUE(loop.suspended_since());
  EXPECT_EQ(loop.in_flight(), 1);
  std::vector<rt::DecisionLoop::Finished> order;
  while (!loop.empty()) {
    for (auto& f : waiting.admit(loop)) order.push_back(std::move(f));
    for (auto& f : loop.step()) order.push_back(std::move(f));
  }
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0].ticket, 2u) << "the short one first";
  EXPECT_EQ(order[1].ticket, 1u);
  ASSERT_EQ(order[0].outcome.status, Status::decided);
  ASSERT_EQ(order[1].outcome.status, Status::decided);
  EXPECT_EQ(order[0].outcome.decision.body, short_alone);
  EXPECT_EQ(order[1].outcome.decision.body, long_alone);
  EXPECT_EQ(order[1].outcome.decision.suspensions, 1);
  EXPECT_GT(order[1].outcome.decision.timings.paused_ms, 0.0);
}

TEST(DecisionLoop, SeveralSlotsDecideAMixWithTheBytesOfEachAlone) {
  const std::vector<Value> bodies = clef::test::mixed_requests();
  std::vector<std::string> alone;
  {
    auto solo = rt::make_engine(config(1));
    for (const Value& body : bodies) alone.push_back(solo.decide(body).body);
  }
  auto engine = rt::make_engine(config(4));
  rt::DecisionLoop loop(*engine.runner);
  ASSERT_EQ(loop.slots(), 4);
  Waiting waiting;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    waiting.queue.emplace_back(i, engine.prepare(bodies[i]));
  }
  std::vector<std::string> got(bodies.size());
  int steps = 0;
  while (!waiting.queue.empty() || !loop.empty()) {
    for (auto& f : waiting.admit(loop)) ADD_FAILURE() << "request " << f.ticket << " left early";
    EXPECT_LE(loop.in_flight(), 4);
    for (auto& f : loop.step()) {
      ASSERT_EQ(f.outcome.status, Status::decided) << "request " << f.ticket;
      got[f.ticket] = f.outcome.decision.body;
    }
    ++steps;
  }
  EXPECT_GT(steps, 2);
  for (std::size_t i = 0; i < bodies.size(); ++i) EXPECT_EQ(got[i], alone[i]) << "request " << i;
}

TEST(DecisionLoop, AGoneClientIsDroppedBeforeItBeginsOrStoppedWithoutDisturbingTheOthers) {
  auto engine = rt::make_engine(config(2));
  const Value a =
      clef::test::ticket_request(clef::test::ticket_words(300), clef::test::kTicketQuestionsA);
  const Value b =
      clef::test::ticket_request(clef::test::ticket_words(250), clef::test::kTicketQuestionsB);
  const std::string b_alone = engine.decide(b).body;
  rt::DecisionLoop loop(*engine.runner);
  Waiting waiting;
  rt::PreparedRequest gone = engine.prepare(a);
  gone.cancellation.cancel();
  waiting.queue.emplace_back(0, std::move(gone));
  std::vector<rt::DecisionLoop::Finished> left = waiting.admit(loop);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].outcome.status, Status::dropped);
  EXPECT_TRUE(loop.empty());

  rt::PreparedRequest leaving = engine.prepare(a);
  rt::Cancellation handle = leaving.cancellation;
  waiting.queue.emplace_back(1, std::move(leaving));
  waiting.queue.emplace_back(2, engine.prepare(b));
  EXPECT_TRUE(waiting.admit(loop).empty());
  EXPECT_TRUE(loop.step().empty());
  handle.cancel();  // the client of request 1 goes after its first piece
  std::vector<rt::DecisionLoop::Finished> done;
  while (!loop.empty()) {
    for (auto& f : loop.step()) done.push_back(std::move(f));
  }
  ASSERT_EQ(done.size(), 2u);
  for (const auto& f : done) {
    if (f.ticket == 1) {
      EXPECT_EQ(f.outcome.status, Status::cancelled);
      EXPECT_NE(f.outcome.error, nullptr);
    } else {
      ASSERT_EQ(f.outcome.status, Status::decided);
      EXPECT_EQ(f.outcome.decision.body, b_alone);
    }
  }
}

TEST(DecisionLoop, DecideAloneIsTheLoopWithOneDecision) {
  auto engine = rt::make_engine(config(1));
  const Value body =
      clef::test::ticket_request(clef::test::ticket_words(200), clef::test::kTicketQuestionsA);
  const rt::PreparedRequest prepared = engine.prepare(body);
  const std::string once = rt::decide_alone(*engine.runner, prepared).body;
  EXPECT_EQ(engine.decide(body).body, once);
  rt::PreparedRequest gone = engine.prepare(body);
  gone.cancellation.cancel();
  EXPECT_THROW(rt::decide_alone(*engine.runner, gone), clef::DecisionCancelled);
  EXPECT_EQ(rt::decide_alone(*engine.runner, prepared).body, once) << "nothing left behind";
}

}  // namespace
