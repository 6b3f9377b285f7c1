#include "runtime/loop/cancellation.hpp"

#include <atomic>
#include <mutex>

namespace clef::runtime {

struct Cancellation::State {
  std::atomic<bool> cancelled{false};
  std::function<bool()> probe;  ///< empty: only cancel() cancels
  std::chrono::milliseconds interval{0};
  std::mutex probe_mutex;  ///< one prober at a time; the others read `cancelled`
  std::chrono::steady_clock::time_point last_probe{};
};

Cancellation::Cancellation() : state_(std::make_shared<State>()) {}

Cancellation Cancellation::polling(std::function<bool()> probe,
                                   std::chrono::milliseconds interval) {
  Cancellation c;
  c.state_->probe = std::move(probe);
  c.state_->interval = interval;
  return c;
}

void Cancellation::cancel() noexcept {
  state_->cancelled.store(true);
}

bool Cancellation::requested() const noexcept {
  State& s = *state_;
  if (s.cancelled.load()) return true;
  if (!s.probe) return false;
  std::unique_lock lock(s.probe_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  const auto now = std::chrono::steady_clock::now();
  if (s.last_probe != std::chrono::steady_clock::time_point{} && now - s.last_probe < s.interval) {
    return false;
  }
  s.last_probe = now;
  try {
    if (s.probe()) s.cancelled.store(true);
  } catch (...) {
    // a probe that fails must not cancel the decision
  }
  return s.cancelled.load();
}

std::function<bool()> Cancellation::as_check() const {
  return [self = *this] { return self.requested(); };
}

}  // namespace clef::runtime
