#include "runtime/loop/decision_loop.hpp"

#include <algorithm>
#include <iterator>

#include "util/elapsed.hpp"
#include "util/error.hpp"

namespace clef::runtime {

using util::ms_between;

DecisionOutcome outcome_of_current_exception() {
  DecisionOutcome outcome;
  try {
    throw;
  } catch (const DecisionCancelled&) {
    outcome.status = DecisionOutcome::Status::cancelled;
  } catch (...) {
    outcome.status = DecisionOutcome::Status::failed;
  }
  outcome.error = std::current_exception();
  return outcome;
}

/// A decision in progress: its request (kept by the loop, or by the caller of begin()), the
/// runner's handle, and what the scheduler needs to know of it.
struct DecisionLoop::Active {
  Ticket ticket = 0;
  std::optional<PreparedRequest> owned;
  const PreparedRequest* prepared = nullptr;  ///< &*owned, or the caller's
  std::unique_ptr<DecisionInProgress> decision;
  Clock::time_point began;
  int steps_out = 0;     ///< steps in a row it sat out for much shorter ones
  bool stepped = false;  ///< advanced since it began or resumed
  /// Runner::suspend took it off its sequence (the runner's decision keeps that state).
  bool suspended() const { return decision && decision->suspended(); }
};

namespace {

StepShape shape_of(const Runner& runner, bool open) {
  StepShape shape = runner.step_shape();
  shape.slots = std::max(1, shape.slots);
  shape.open = open;
  return shape;
}

}  // namespace

DecisionLoop::DecisionLoop(Runner& runner, bool open)
    : runner_(runner), shape_(shape_of(runner, open)) {}

DecisionLoop::~DecisionLoop() = default;

int DecisionLoop::in_flight() const noexcept {
  return static_cast<int>(std::count_if(active_.begin(), active_.end(),
                                        [](const Active& a) { return !a.suspended(); }));
}

std::optional<DecisionLoop::Clock::time_point> DecisionLoop::suspended_since() const {
  for (const Active& a : active_) {
    if (a.suspended()) return a.decision->suspended_at();
  }
  return std::nullopt;
}

std::vector<RunningDecision> DecisionLoop::view() const {
  std::vector<RunningDecision> running;
  running.reserve(active_.size());
  for (const Active& a : active_) {
    running.push_back({a.prepared->input_tokens(), a.decision->tokens_left(),
                       a.decision->images_left(), a.decision->prefilling(), a.steps_out, a.stepped,
                       a.suspended(), a.prepared->cancellation.requested()});
  }
  return running;
}

std::list<DecisionLoop::Active>::iterator DecisionLoop::nth(std::size_t i) {
  return std::next(active_.begin(), static_cast<std::ptrdiff_t>(i));
}

Admission DecisionLoop::plan(std::span<const WaitingRequest> waiting) const {
  return plan_admission(shape_.slots, view(), waiting);
}

DecisionLoop::Finished DecisionLoop::leave(std::list<Active>::iterator it,
                                           DecisionOutcome outcome) {
  outcome.decision_ms = ms_between(it->began, Clock::now()) - outcome.decision.timings.paused_ms;
  Finished done{it->ticket, std::move(outcome)};
  it->decision.reset();  // gives its sequence back before its request goes
  active_.erase(it);
  return done;
}

std::optional<DecisionLoop::Finished> DecisionLoop::begin(Active&& incoming) {
  const PreparedRequest& request = incoming.owned ? *incoming.owned : *incoming.prepared;
  if (request.cancellation.requested()) {
    DecisionOutcome dropped;
    dropped.status = DecisionOutcome::Status::dropped;
    return Finished{incoming.ticket, std::move(dropped)};
  }
  incoming.began = Clock::now();
  // In place first: the decision refers to its prepared request, which must not move.
  active_.push_back(std::move(incoming));
  Active& a = active_.back();
  if (a.owned) a.prepared = &*a.owned;
  try {
    a.decision = runner_.begin(*a.prepared);
  } catch (...) {
    return leave(std::prev(active_.end()), outcome_of_current_exception());
  }
  return std::nullopt;
}

std::optional<DecisionLoop::Finished> DecisionLoop::begin(Ticket ticket,
                                                          const PreparedRequest& prepared) {
  Active a;
  a.ticket = ticket;
  a.prepared = &prepared;
  return begin(std::move(a));
}

std::vector<DecisionLoop::Finished> DecisionLoop::admit(
    const Admission& plan, std::vector<std::pair<Ticket, PreparedRequest>> incoming) {
  std::vector<Finished> left;
  const std::optional<std::size_t> change = plan.suspend ? plan.suspend : plan.resume;
  if (change && *change < active_.size()) {
    const auto it = nth(*change);
    try {
      if (plan.suspend) {
        runner_.suspend(*it->decision);
      } else {
        runner_.resume(*it->decision);
        it->stepped = false;
      }
    } catch (...) {
      // The backbone could not keep or set back its memory: that decision is lost, told why.
      left.push_back(leave(it, outcome_of_current_exception()));
    }
  }
  for (auto& [ticket, prepared] : incoming) {
    Active a;
    a.ticket = ticket;
    a.owned.emplace(std::move(prepared));
    if (auto gone = begin(std::move(a))) left.push_back(std::move(*gone));
  }
  return left;
}

std::vector<DecisionLoop::Finished> DecisionLoop::step() {
  std::vector<Finished> left;
  if (active_.empty()) return left;
  const StepPlan plan = plan_step(shape_, view());
  std::vector<DecisionInProgress*> advancing;
  std::vector<DecisionInProgress*> starting;
  Runner::StepOrders orders;
  orders.most_tokens = plan.most_tokens;
  const auto named = [](const std::vector<std::size_t>& list, std::size_t index) {
    return std::find(list.begin(), list.end(), index) != list.end();
  };
  std::size_t i = 0;
  for (Active& a : active_) {
    const std::size_t index = i++;
    if (a.suspended()) continue;
    if (!named(plan.advance, index)) {
      ++a.steps_out;
      continue;
    }
    a.steps_out = 0;
    a.stepped = true;
    advancing.push_back(a.decision.get());
    if (named(plan.start, index)) starting.push_back(a.decision.get());
    if (plan.encode == index) orders.encode = a.decision.get();
  }
  orders.advance = advancing;
  orders.start = starting;
  try {
    if (!advancing.empty()) runner_.step(orders);
  } catch (...) {
    // The backbone failed: every decision of this step is lost, each told why (a suspended one
    // keeps its memory aside and goes on).
    for (auto it = active_.begin(); it != active_.end();) {
      const auto next = std::next(it);
      if (!it->suspended()) left.push_back(leave(it, outcome_of_current_exception()));
      it = next;
    }
  }
  for (auto it = active_.begin(); it != active_.end();) {
    const auto next = std::next(it);
    if (!it->suspended() && it->decision->prefilled()) {
      DecisionOutcome outcome;
      try {
        outcome.decision = runner_.finish(*it->decision);
        outcome.status = DecisionOutcome::Status::decided;
      } catch (...) {
        outcome = outcome_of_current_exception();
      }
      left.push_back(leave(it, std::move(outcome)));
    }
    it = next;
  }
  return left;
}

Decision Engine::decide(const PreparedRequest& prepared) {
  return decide_alone(*runner, prepared);
}

Decision decide_alone(Runner& runner, const PreparedRequest& prepared) {
  DecisionLoop loop(runner, false);
  std::optional<DecisionLoop::Finished> done = loop.begin(0, prepared);
  while (!done) {
    std::vector<DecisionLoop::Finished> left = loop.step();
    if (!left.empty()) done = std::move(left.front());
  }
  DecisionOutcome& outcome = done->outcome;
  switch (outcome.status) {
    case DecisionOutcome::Status::decided:
      return std::move(outcome.decision);
    case DecisionOutcome::Status::dropped:
      throw DecisionCancelled("the client closed the connection before its decision began");
    case DecisionOutcome::Status::failed:
    case DecisionOutcome::Status::cancelled:
      break;
  }
  std::rethrow_exception(outcome.error);
}

}  // namespace clef::runtime
