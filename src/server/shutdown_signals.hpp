#pragma once
// SIGTERM/SIGINT without signal handlers: the constructor blocks them in the calling thread (and
// so in every thread started after it, which inherit the mask) and wait_for() takes them
// synchronously with sigtimedwait(). No code runs in signal context; no global state.

#include <chrono>
#include <csignal>

namespace clef::server {

class ShutdownSignals {
 public:
  /// Blocks SIGTERM and SIGINT in this thread. Construct it before any other thread starts, or
  /// threads started earlier may still take the signal (and die of it).
  ShutdownSignals();
  /// Discards SIGTERM/SIGINT still pending (a second Ctrl-C during the drain) and restores the
  /// thread's previous signal mask.
  ~ShutdownSignals();

  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  /// Waits up to `timeout` for SIGTERM or SIGINT; returns the signal number, or 0 on timeout.
  int wait_for(std::chrono::milliseconds timeout);

 private:
  sigset_t set_{};
  sigset_t old_mask_{};
};

}  // namespace clef::server
