#pragma once
// The cancellation handle of one decision: whoever queued it (the server, for a client that may
// hang up) can stop it; the decision loop reads it at every step and the backbone inside prefill
// pieces. A decision's handle is a flag: the server's HTTP thread watches its own connection and
// sets it; nothing on the runtime side touches a socket.

#include <chrono>
#include <functional>
#include <memory>

namespace clef::runtime {

/// Cheap to copy: copies share one state. Thread-safe. A default-constructed handle is never
/// cancelled unless cancel() is called on it (or a copy).
class Cancellation {
 public:
  Cancellation();

  /// A handle that also asks `probe` (e.g. "has the client closed its connection?") when
  /// requested() is called, at most once per `interval`; the first true is remembered. A probe
  /// that throws counts as false. For work on the connection's own thread that cannot watch it
  /// meanwhile: the server's preparation of a request (a video being read).
  static Cancellation polling(std::function<bool()> probe,
                              std::chrono::milliseconds interval = std::chrono::milliseconds(50));

  /// Cancels the decision; requested() is true from now on.
  void cancel() noexcept;

  /// True once the decision should stop. Cheap and non-throwing: llama.cpp calls it between graph
  /// nodes (through the abort callback), possibly from several threads.
  bool requested() const noexcept;

  /// requested() as a callable, for Backbone::hidden_states.
  std::function<bool()> as_check() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace clef::runtime
