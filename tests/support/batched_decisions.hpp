#pragma once
// Test support for continuous batching (Runner::begin / step / finish): a mix of requests (text
// lengths, images, a truncated state, shared states) and a loop that decides them together, a new
// one joining as soon as one is done. Used by the CPU batching tests and the device (gpu) tests.

#include <gtest/gtest.h>

#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backbone/prefill_layout.hpp"
#include "json/value.hpp"
#include "media/base64.hpp"
#include "runtime/make_engine.hpp"
#include "support/grey_png.hpp"
#include "support/ticket_requests.hpp"
#include "support/ticket_text.hpp"

namespace clef::test {

/// A data URI of a grey PNG of w x h pixels.
inline std::string grey_png_uri(int w, int h) {
  const std::string png = grey_png(static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h));
  return "data:image/png;base64," +
         media::encode_base64({reinterpret_cast<const std::uint8_t*>(png.data()), png.size()});
}

/// A mix of 8 requests: short and long states, two with an image, one whose state a 1,024-token
/// context truncates, and pairs that share a state (a cache hit when the first is done first).
inline std::vector<json::Value> mixed_requests() {
  const auto request = [](const std::string& state, const char* questions,
                          const std::string& image = {}) {
    return ticket_request(state, questions,
                          image.empty() ? std::vector<std::string>{} : std::vector{image});
  };
  std::vector<json::Value> out;
  out.push_back(request("Production database is down", kTicketQuestionsA));
  out.push_back(request(ticket_words(150), kTicketQuestionsB));
  out.push_back(request("What is in the picture?", kTicketQuestionsA, grey_png_uri(64, 48)));
  out.push_back(request(ticket_words(2000), kTicketQuestionsA));  // truncated
  out.push_back(request(ticket_words(150), kTicketQuestionsA));   // shares #1's state
  out.push_back(request("A", kTicketQuestionsB));
  out.push_back(request("Compare these", kTicketQuestionsB, grey_png_uri(40, 90)));
  out.push_back(request(ticket_words(37), kTicketQuestionsB));
  return out;
}

/// One decision of a batch with what it refers to.
struct InFlight {
  runtime::PreparedRequest prepared;
  std::unique_ptr<runtime::DecisionInProgress> decision;
  std::size_t index = 0;
};

/// Runner::step of every one of `decisions` as the loop steps them when none sits out: the plan
/// of runtime::plan_step over them (pieces shared within a chunk, the next image of the first one
/// with images left encoded first, the prefills that can start started).
inline void step_together(runtime::Runner& runner,
                          std::span<runtime::DecisionInProgress* const> decisions) {
  std::vector<runtime::RunningDecision> view;
  for (const runtime::DecisionInProgress* d : decisions) {
    runtime::RunningDecision r;
    r.tokens_left = d->tokens_left();
    r.images_left = d->images_left();
    r.prefilling = d->prefilling();
    r.size = r.tokens_left;
    view.push_back(r);
  }
  runtime::StepShape shape = runner.step_shape();
  shape.slots = 1;  // every one advances: none sits out
  const runtime::StepPlan plan = runtime::plan_step(shape, view);
  std::vector<runtime::DecisionInProgress*> advance;
  std::vector<runtime::DecisionInProgress*> start;
  for (const std::size_t i : plan.advance) advance.push_back(decisions[i]);
  for (const std::size_t i : plan.start) start.push_back(decisions[i]);
  runtime::Runner::StepOrders orders;
  orders.advance = advance;
  orders.start = start;
  orders.encode = plan.encode ? decisions[*plan.encode] : nullptr;
  orders.most_tokens = plan.most_tokens;
  runner.step(orders);
}

/// Decides `bodies` on `engine` by continuous batching: at most parallel() at once, a new one
/// joining as soon as one is done; returns each answer body by index. Expects more than one step.
inline std::vector<std::string> decide_together(runtime::Engine& engine,
                                                const std::vector<json::Value>& bodies) {
  std::vector<std::string> out(bodies.size());
  std::list<InFlight> active;  // a list: a prepared request must not move while it is decided
  std::size_t next = 0;
  int steps = 0;
  while (next < bodies.size() || !active.empty()) {
    while (next < bodies.size() &&
           active.size() < static_cast<std::size_t>(engine.runner->parallel())) {
      InFlight& f = active.emplace_back();
      f.prepared = engine.prepare(bodies[next]);
      f.index = next++;
      f.decision = engine.runner->begin(f.prepared);
    }
    std::vector<runtime::DecisionInProgress*> step;
    for (InFlight& f : active) step.push_back(f.decision.get());
    step_together(*engine.runner, step);
    ++steps;
    for (auto it = active.begin(); it != active.end();) {
      if (!it->decision->prefilled()) {
        ++it;
        continue;
      }
      out[it->index] = engine.runner->finish(*it->decision).body;
      it = active.erase(it);
    }
  }
  EXPECT_GT(steps, 1);
  return out;
}

}  // namespace clef::test
