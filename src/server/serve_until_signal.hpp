#pragma once
// The life of `clef serve`: bind, announce, serve until SIGTERM/SIGINT, drain, exit.

#include <chrono>
#include <csignal>
#include <functional>
#include <ostream>

#include "runtime/loop/decision_queue.hpp"
#include "server/server_config.hpp"

namespace clef::server {

/// SIGTERM/SIGINT (and SIGHUP when asked) without signal handlers: the constructor blocks them in
/// the calling thread (and so in every thread started after it, which inherit the mask) and
/// wait_for() takes them synchronously with sigtimedwait(). No code runs in signal context; no
/// global state.
class ShutdownSignals {
 public:
  /// Blocks SIGTERM and SIGINT in this thread, and SIGHUP when `take_sighup` (the server re-reads
  /// its API key file then; otherwise SIGHUP keeps its default: the process ends). Construct it
  /// before any other thread starts, or threads started earlier may still take the signal.
  explicit ShutdownSignals(bool take_sighup = false);
  /// Discards SIGTERM/SIGINT still pending (a second Ctrl-C during the drain) and restores the
  /// thread's previous signal mask.
  ~ShutdownSignals();

  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  /// Waits up to `timeout` for one of the signals; returns its number, or 0 on timeout.
  int wait_for(std::chrono::milliseconds timeout);

 private:
  sigset_t set_{};
  sigset_t old_mask_{};
};

/// Holds SIGHUP back (blocked in the calling thread and the threads it starts) for its lifetime,
/// so a SIGHUP sent while `clef serve` starts (making the demo model, downloading one) waits for
/// serve_until_signal, which takes it as "re-read the key file", instead of ending the process.
/// The destructor discards a SIGHUP still pending and restores the mask.
class HeldSighup {
 public:
  HeldSighup();
  ~HeldSighup();
  HeldSighup(const HeldSighup&) = delete;
  HeldSighup& operator=(const HeldSighup&) = delete;

 private:
  sigset_t old_mask_{};
};

/// Blocks SIGTERM/SIGINT (call it before any other thread starts), binds `config`'s address,
/// prints one line `clef serve: listening on http://HOST:PORT` to `out` (the actual port when
/// config.port is 0) and serves while the model loads on the runtime thread.
/// Returns the process exit code:
///   0  after SIGTERM/SIGINT: new requests got 503, queued and running decisions were answered
///      (during the model load, if `on_signal` did not stop it within 2 s, the process exits 0
///      right there: nothing was accepted yet);
///   1  the address could not be bound;
///   2  the model failed to load (the reason is logged) or `config` is invalid.
/// SIGHUP re-reads config.api_key_file (HttpServer::reload_api_keys; without one it is logged
/// and nothing else) and serving goes on: it never ends the server.
/// `on_signal` (optional) runs on this thread when the signal arrives, before the drain; `clef
/// serve` uses it to abort a model load still in progress (BackboneParams::on_progress).
int serve_until_signal(const ServerConfig& config, runtime::DecisionQueue::Factory factory,
                       std::ostream& out, std::ostream& log, std::function<void()> on_signal = {});

}  // namespace clef::server
