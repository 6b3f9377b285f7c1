#include "runtime/scheduler.hpp"

#include <algorithm>
#include <limits>

#include "backbone/prefill_layout.hpp"

namespace clef::runtime {

namespace {

/// The first running decision that is (or is not) suspended.
std::optional<std::size_t> first_where(std::span<const RunningDecision> running, bool suspended) {
  for (std::size_t i = 0; i < running.size(); ++i) {
    if (running[i].suspended == suspended) return i;
  }
  return std::nullopt;
}

}  // namespace

Admission plan_admission(int slots, std::span<const RunningDecision> running,
                         std::span<const WaitingRequest> waiting) {
  Admission plan;
  if (slots > 1) {
    const std::size_t most = static_cast<std::size_t>(slots);
    for (std::size_t i = 0; i < waiting.size() && running.size() + plan.begin.size() < most; ++i) {
      plan.begin.push_back(i);
    }
    return plan;
  }
  const std::optional<std::size_t> active = first_where(running, false);
  const std::optional<std::size_t> suspended = first_where(running, true);
  auto first_shorter = [&](int size, bool only_before) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      if ((!only_before || waiting[i].before_suspension) &&
          is_much_shorter(waiting[i].size, size)) {
        return i;
      }
    }
    return std::nullopt;
  };
  if (active) {
    const RunningDecision& a = running[*active];
    if (suspended || !a.stepped || a.cancelled || a.tokens_left == 0) return plan;
    if (const auto shorter = first_shorter(a.size, false)) {
      plan.suspend = active;
      plan.begin.push_back(*shorter);
    }
    return plan;
  }
  if (suspended) {
    if (const auto shorter = first_shorter(running[*suspended].size, true)) {
      plan.begin.push_back(*shorter);
    } else {
      plan.resume = suspended;
    }
    return plan;
  }
  if (!waiting.empty()) plan.begin.push_back(0);
  return plan;
}

StepPlan plan_step(int slots, std::span<const RunningDecision> running) {
  StepPlan plan;
  // The first advancing decision with images left: the one the tower encodes.
  const auto encode_first = [&] {
    const auto it = std::find_if(plan.advance.begin(), plan.advance.end(),
                                 [&](std::size_t i) { return running[i].images_left > 0; });
    if (it != plan.advance.end()) plan.encode = *it;
    return plan;
  };
  plan.most_tokens = backbone::kPausablePiece;
  if (slots <= 1) {
    const bool one_waits =
        std::any_of(running.begin(), running.end(), [](const auto& r) { return r.suspended; });
    for (std::size_t i = 0; i < running.size(); ++i) {
      if (!running[i].suspended) plan.advance.push_back(i);
    }
    if (one_waits) plan.most_tokens = backbone::kWholeBatches;
    return encode_first();
  }
  int fewest = std::numeric_limits<int>::max();
  for (const RunningDecision& r : running) {
    if (!r.suspended) fewest = std::min(fewest, r.tokens_left);
  }
  for (std::size_t i = 0; i < running.size(); ++i) {
    const RunningDecision& r = running[i];
    if (r.suspended) continue;
    // The shortest one always goes (one with nothing left to prefill among them included).
    if (r.tokens_left > fewest && is_much_shorter(fewest, r.tokens_left) &&
        r.steps_out < kMostStepsOut && !r.cancelled) {
      continue;  // sits this step out
    }
    plan.advance.push_back(i);
  }
  return encode_first();
}

}  // namespace clef::runtime
