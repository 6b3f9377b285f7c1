// The server's queue with a batching engine (--parallel 2) over the tiny test model: requests
// decided by continuous batching give the bytes of the same requests decided alone, a request
// whose client has gone is not decided and disturbs nobody, and the queue says how many
// decisions are in its batch.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "runtime/loop/decision_queue.hpp"
#include "runtime/make_engine.hpp"
#include "support/ticket_requests.hpp"
#include "support/ticket_text.hpp"
#include "support/tiny_engine_config.hpp"

namespace clef::runtime {
namespace {

using namespace std::chrono_literals;

runtime::EngineConfig config(int parallel) {
  runtime::EngineConfig c = test::tiny_engine_config(false);
  c.backbone.chunk_tokens = 64;
  c.backbone.parallel = parallel;
  c.state_cache_mb = 0;
  return c;
}

TEST(BatchedQueue, GivesTheSoloBytesAndAGoneClientStopsOnlyItsOwnRequest) {
  const std::vector<json::Value> bodies = {
      test::ticket_request(test::ticket_words(2500), test::kTicketQuestionsA),
      test::ticket_request("A", test::kTicketQuestionsB),
      test::ticket_request(test::ticket_words(300), test::kTicketQuestionsB),
      test::ticket_request(test::ticket_words(40), test::kTicketQuestionsA)};
  auto solo = runtime::make_engine(config(1));
  std::vector<std::string> alone;
  for (const json::Value& body : bodies) alone.push_back(solo.decide(body).body);
  solo = {};

  DecisionQueue queue([] { return runtime::make_engine(config(2)); }, 16, warmup_request());
  queue.start();
  ASSERT_TRUE(queue.wait_until_ready(60s));
  ASSERT_EQ(queue.served()->limits.parallel, 2);

  // A long request, then shorter ones while it runs, one of them gone before it is decided.
  std::vector<std::future<DecisionOutcome>> answers;
  answers.push_back(queue.submit(queue.prepare(bodies[0])));
  runtime::PreparedRequest gone = queue.prepare(bodies[2]);
  runtime::Cancellation hang_up = gone.cancellation;
  answers.push_back(queue.submit(queue.prepare(bodies[1])));
  auto gone_answer = queue.submit(std::move(gone));
  hang_up.cancel();
  answers.push_back(queue.submit(queue.prepare(bodies[3])));
  const std::size_t which[] = {0, 1, 3};
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const DecisionOutcome o = answers[i].get();
    ASSERT_EQ(o.status, DecisionOutcome::Status::decided) << "request " << which[i];
    EXPECT_EQ(o.decision.body, alone[which[i]]) << "request " << which[i];
  }
  const DecisionOutcome g = gone_answer.get();
  EXPECT_TRUE(g.status == DecisionOutcome::Status::dropped ||
              g.status == DecisionOutcome::Status::cancelled);
  EXPECT_TRUE(g.decision.body.empty());

  // The gone request's place is free again: all four together give the solo bytes.
  std::vector<std::future<DecisionOutcome>> again;
  for (const json::Value& body : bodies) again.push_back(queue.submit(queue.prepare(body)));
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const DecisionOutcome o = again[i].get();
    ASSERT_EQ(o.status, DecisionOutcome::Status::decided) << i;
    EXPECT_EQ(o.decision.body, alone[i]) << i;
  }
  EXPECT_EQ(queue.in_flight(), 0);
  queue.drain();
}

}  // namespace
}  // namespace clef::runtime
