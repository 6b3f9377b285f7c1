#pragma once
// The policy of the one decision loop (runtime::DecisionQueue's runtime thread). Before every step
// the loop hands these pure functions plain data (the decisions in progress, the requests
// waiting) and executes what they return on the Runner: which waiting requests begin, which
// decision is suspended or resumed, which image the vision tower encodes, which prefills start,
// which decisions advance and by how many tokens at most. The step's token budget is set here
// and nowhere else (the runner and the backbone carry it out).
// Nothing here calls anything; the backbone only decodes what the loop tells it (vLLM's v1
// `schedule()` returning per-step data, llama.cpp's server loop over slots).
//
// With one slot (--parallel 1) a long decision is suspended between two of its pieces while a
// much shorter request waits (its memory taken out of the context and set back later: the same
// bytes), the shorter ones that were waiting then run in arrival order, and the long one resumes.
// With several slots nothing is suspended: a decision sits a step out while another has at most
// half its tokens left, at most kMostStepsOut steps in a row.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace clef::runtime {

/// What every step of a loop is planned within: the runner's sequences and backbone
/// (Runner::step_shape), and whether requests may arrive while a decision runs.
struct StepShape {
  int slots = 1;               ///< sequences decided together (Runner::parallel, >= 1)
  int chunk_tokens = 512;      ///< the most tokens of one backbone call (BackboneParams)
  bool whole_batches = false;  ///< only whole layout batches (flash attention: pieces would
                               ///< move the rows)
  bool open = true;            ///< requests may arrive while one runs (a server): a lone
                               ///< prefill goes in pieces a newcomer can pass between
};

/// A decision in progress as the scheduler sees it, in the order they began.
struct RunningDecision {
  int size = 0;             ///< tokens of its record (PreparedRequest::input_tokens)
  int tokens_left = 0;      ///< DecisionInProgress::tokens_left, 0 once prefilled
  int images_left = 0;      ///< DecisionInProgress::images_left: vision-tower work before it
  bool prefilling = false;  ///< its prefill has started (DecisionInProgress::prefilling)
  int steps_out = 0;        ///< steps in a row it sat out for much shorter ones
  bool stepped = false;     ///< it has advanced at least once since it began or resumed
  bool suspended = false;   ///< its memory is out of the context (Runner::suspend)
  bool cancelled = false;   ///< its client has gone: the next step stops it
};

/// A request waiting in the queue, in arrival order.
struct WaitingRequest {
  int size = 0;  ///< tokens of its record
  /// It was waiting when the suspended decision (if any) was suspended.
  bool before_suspension = false;
};

/// What changes before a step: plan_admission().
struct Admission {
  std::vector<std::size_t> begin;      ///< waiting requests that begin, indexes in arrival order
  std::optional<std::size_t> suspend;  ///< a running decision to suspend first
  std::optional<std::size_t> resume;   ///< a suspended decision to resume
};

/// What a step runs: plan_step(). The loop and the runner carry it out without deciding again.
struct StepPlan {
  std::vector<std::size_t> advance;  ///< indexes of running decisions
  /// The most tokens each advancing prefill decodes in this step (Backbone::step's
  /// piece_tokens: backbone::shared_piece of kPausablePiece among the prefills that advance, or
  /// backbone::kWholeBatches).
  int most_tokens = 0;
  /// Those of `advance` whose prefill starts in this step, after the encode (their images are
  /// all encoded then; those the state cache resumed need none).
  std::vector<std::size_t> start;
  /// The advancing decision whose next image the vision tower encodes first (at most one image
  /// a step: an encode cannot be interrupted, so a request with images holds the others up for
  /// one image at a time); nullopt: none.
  std::optional<std::size_t> encode;
};

/// The most steps in a row a decision sits out for much shorter ones (no starvation).
inline constexpr int kMostStepsOut = 64;

/// A request of `tokens` tokens goes before one of `running_tokens`: at most half its size (a
/// short request need not wait for a long one; similar sizes keep their order).
constexpr bool is_much_shorter(int tokens, int running_tokens) {
  return 2 * tokens <= running_tokens;
}

/// What begins, is suspended or resumed before the next step, with `slots` sequences (the
/// runner's parallel(), >= 1). Several slots: waiting requests begin in arrival order while a
/// slot is free. One slot: an idle slot takes the first waiting request, or, while a decision is
/// suspended, the first much shorter one that was waiting when it was suspended, else resumes
/// it; a running decision that has stepped and is not prefilled is suspended for a much shorter
/// waiting request (which begins at once) unless one is suspended already (no nesting).
Admission plan_admission(int slots, std::span<const RunningDecision> running,
                         std::span<const WaitingRequest> waiting);

/// Which of `running` (after plan_admission's changes were made) advance in the next step, by how
/// many tokens at most, whose next image the vision tower encodes (the first advancing one with
/// images left) and whose prefill starts. Suspended ones never advance. One slot: the running
/// one, in pieces of kPausablePiece, or in whole layout batches while a suspended one waits for it
/// (it cannot be suspended in turn) or when the loop is closed (nobody can come to pass it).
/// Several slots: all but those that sit out (another has at most half their tokens left; after
/// kMostStepsOut steps out in a row, or once cancelled, they go anyway), sharing a piece of
/// kPausablePiece within one chunk (backbone::shared_piece). With shape.whole_batches, always
/// whole layout batches.
StepPlan plan_step(const StepShape& shape, std::span<const RunningDecision> running);

}  // namespace clef::runtime
