#include "runtime/loop/scheduler.hpp"

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

StepPlan plan_step(const StepShape& shape, std::span<const RunningDecision> running) {
  StepPlan plan;
  if (shape.slots <= 1) {
    for (std::size_t i = 0; i < running.size(); ++i) {
      if (!running[i].suspended) plan.advance.push_back(i);
    }
  } else {
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
  }
  // The first advancing decision with images left: the one the tower encodes.
  const auto first_with_images =
      std::find_if(plan.advance.begin(), plan.advance.end(),
                   [&](std::size_t i) { return running[i].images_left > 0; });
  if (first_with_images != plan.advance.end()) plan.encode = *first_with_images;
  // Prefills that start (every image encoded by then) and the prefills that decode a piece.
  int prefilling = 0;
  for (const std::size_t i : plan.advance) {
    const RunningDecision& r = running[i];
    const bool ready =
        r.prefilling || r.images_left == 0 || (plan.encode == i && r.images_left == 1);
    if (!r.prefilling && ready) plan.start.push_back(i);
    if (ready && r.tokens_left > 0 && !r.cancelled) ++prefilling;
  }
  const bool one_waits =
      std::any_of(running.begin(), running.end(), [](const auto& r) { return r.suspended; });
  const bool whole = shape.whole_batches || (shape.slots <= 1 && (one_waits || !shape.open));
  plan.most_tokens =
      backbone::shared_piece(whole ? backbone::kWholeBatches : backbone::kPausablePiece,
                             shape.chunk_tokens, std::max(1, prefilling));
  return plan;
}

}  // namespace clef::runtime
