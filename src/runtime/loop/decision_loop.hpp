#pragma once
// The one decision loop: the decisions in progress on a Runner, and each step the plain data of
// runtime/loop/scheduler.hpp carried out on it (begin, suspend, resume, step, finish). It is driven
// from above by whoever owns the runner's thread: the server's runtime thread (each turn it
// hands over the requests the plan lets begin) and, for one decision at a time, decide_alone()
// (clef ask, verify, calibrate, batch with a local model). It calls nothing above it; what
// becomes of a decision is data (DecisionOutcome), never an exception thrown through the loop.

#include <chrono>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "runtime/loop/engine.hpp"
#include "runtime/loop/prepared_request.hpp"
#include "runtime/loop/runner.hpp"
#include "runtime/loop/scheduler.hpp"
#include "util/error.hpp"

namespace clef::runtime {

/// What became of one decision.
struct DecisionOutcome {
  enum class Status {
    decided,    ///< `decision` holds the answer
    failed,     ///< `error` holds what the runner threw (clef::Error or another exception)
    dropped,    ///< cancelled before it began; not decided
    cancelled,  ///< cancelled while it was decided: stopped (`error`, a DecisionCancelled, says
                ///< where)
  };
  Status status = Status::failed;
  Decision decision;
  std::exception_ptr error;
  double queue_wait_ms = 0;  ///< submitted -> began (set by whoever queued it)
  double decision_ms = 0;    ///< began -> finished, less the time it was suspended
};

/// The loop over one Runner. Not thread-safe: every call on the runner's thread.
class DecisionLoop {
 public:
  using Clock = std::chrono::steady_clock;
  using Ticket = std::uint64_t;

  /// A decision that left the loop, and what became of it.
  struct Finished {
    Ticket ticket = 0;
    DecisionOutcome outcome;
  };

  /// A loop over `runner` (kept alive by the caller longer than the loop). `open`: requests may
  /// arrive while a decision runs (a server), so a lone prefill goes in kPausablePiece pieces a
  /// newcomer can pass between; closed (one decision at a time), in whole layout batches.
  explicit DecisionLoop(Runner& runner, bool open = true);
  ~DecisionLoop();
  DecisionLoop(const DecisionLoop&) = delete;
  DecisionLoop& operator=(const DecisionLoop&) = delete;

  /// The runner's sequences (Runner::parallel(), at least 1).
  int slots() const noexcept { return shape_.slots; }
  /// No decision in progress (none suspended either).
  bool empty() const noexcept { return active_.empty(); }
  /// Decisions in progress and not suspended.
  int in_flight() const noexcept;
  /// When the suspended decision (there is at most one) was suspended; nullopt when none is:
  /// requests waiting since then may begin before it resumes (WaitingRequest::before_suspension).
  std::optional<Clock::time_point> suspended_since() const;

  /// What begins, is suspended or resumed before the next step, for the requests waiting (in
  /// arrival order): runtime::plan_admission() over the decisions in progress.
  Admission plan(std::span<const WaitingRequest> waiting) const;

  /// Carries out `plan`'s suspend and resume, then begins `begin` (the requests plan.begin named,
  /// in that order, each with a ticket the caller chose; the loop keeps them). A request already
  /// cancelled is dropped without beginning. Returns the decisions that left: dropped ones, those
  /// the runner refused to begin, one that could not be suspended or resumed (its memory lost,
  /// told why).
  std::vector<Finished> admit(const Admission& plan,
                              std::vector<std::pair<Ticket, PreparedRequest>> begin);

  /// Begins `prepared`, which the caller keeps alive until it leaves the loop, as admit() does
  /// with no suspend or resume. Returns it when it left at once (dropped, refused).
  std::optional<Finished> begin(Ticket ticket, const PreparedRequest& prepared);

  /// One step: runtime::plan_step() says which decisions advance and by how much, the runner
  /// steps them, and every prefilled one is finished. Returns those that left (decided,
  /// cancelled, failed; a failed step fails every decision it advanced, not a suspended one).
  std::vector<Finished> step();

 private:
  struct Active;
  std::vector<RunningDecision> view() const;
  std::list<Active>::iterator nth(std::size_t i);
  std::optional<Finished> begin(Active&& active);
  Finished leave(std::list<Active>::iterator it, DecisionOutcome outcome);

  Runner& runner_;
  const StepShape shape_;     ///< what every step is planned within
  std::list<Active> active_;  // a list: a decision refers to its prepared request, which stays put
};

/// Decides `prepared` alone through a DecisionLoop over `runner` (closed: whole layout batches):
/// what clef ask, verify, calibrate and a local clef batch run. Throws what the decision ended
/// with: clef::DecisionCancelled once prepared.cancellation says so, clef::Error for a request
/// the model cannot take (or internal, when one is already in progress on every sequence).
Decision decide_alone(Runner& runner, const PreparedRequest& prepared);

/// Inside a catch handler: the outcome of the exception being handled, cancelled (a
/// DecisionCancelled: the client has gone) or failed.
DecisionOutcome outcome_of_current_exception();

}  // namespace clef::runtime
