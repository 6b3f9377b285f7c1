// The one decision loop's policy (runtime/loop/scheduler.hpp): plain data in, plain data out.

#include "runtime/loop/scheduler.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "backbone/backbone.hpp"

namespace {

using clef::runtime::Admission;
using clef::runtime::kMostStepsOut;
using clef::runtime::plan_admission;
using clef::runtime::plan_step;
using clef::runtime::RunningDecision;
using clef::runtime::StepPlan;
using clef::runtime::StepShape;
using clef::runtime::WaitingRequest;
using Indexes = std::vector<std::size_t>;

RunningDecision running(int size, int left, bool stepped = true) {
  RunningDecision r;
  r.size = size;
  r.tokens_left = left;
  r.stepped = stepped;
  return r;
}

/// A server's loop over `n` sequences of a backbone with 512-token chunks, flash attention off.
StepShape slots(int n) {
  StepShape shape;
  shape.slots = n;
  shape.chunk_tokens = 512;
  return shape;
}

WaitingRequest waiting(int size, bool before_suspension = false) {
  return WaitingRequest{size, before_suspension};
}

TEST(SchedulerAdmission, SeveralSlotsTakeWaitingRequestsInArrivalOrderWhileOneIsFree) {
  const std::vector<RunningDecision> two = {running(500, 300), running(40, 20)};
  const std::vector<WaitingRequest> queue = {waiting(900), waiting(10), waiting(10)};
  Admission a = plan_admission(4, two, queue);
  EXPECT_EQ(a.begin, (Indexes{0, 1}));  // two free slots, arrival order (not size)
  EXPECT_FALSE(a.suspend);
  EXPECT_FALSE(a.resume);
  a = plan_admission(2, two, queue);
  EXPECT_TRUE(a.begin.empty());
  a = plan_admission(4, {}, {});
  EXPECT_TRUE(a.begin.empty());
}

TEST(SchedulerAdmission, OneIdleSlotTakesTheFirstWaitingRequest) {
  const std::vector<WaitingRequest> queue = {waiting(900), waiting(10)};
  const Admission a = plan_admission(1, {}, queue);
  EXPECT_EQ(a.begin, (Indexes{0}));
  EXPECT_FALSE(a.suspend);
}

TEST(SchedulerAdmission, OneSlotSuspendsALongDecisionForAMuchShorterRequest) {
  const std::vector<RunningDecision> one = {running(1000, 700)};
  // 600 tokens is more than half of 1,000: it waits; 500 is at most half: it goes first.
  EXPECT_TRUE(plan_admission(1, one, std::vector{waiting(600)}).begin.empty());
  const Admission a = plan_admission(1, one, std::vector{waiting(600), waiting(500)});
  ASSERT_TRUE(a.suspend);
  EXPECT_EQ(*a.suspend, 0u);
  EXPECT_EQ(a.begin, (Indexes{1}));
  EXPECT_FALSE(a.resume);
}

TEST(SchedulerAdmission, OneSlotDoesNotSuspendWhatHasNotSteppedIsPrefilledOrIsCancelled) {
  const std::vector<WaitingRequest> queue = {waiting(10)};
  // It has not advanced since it began (or resumed): it goes one piece first (no livelock).
  EXPECT_FALSE(plan_admission(1, std::vector{running(1000, 1000, false)}, queue).suspend);
  // Prefilled: its answer is one head call away.
  EXPECT_FALSE(plan_admission(1, std::vector{running(1000, 0)}, queue).suspend);
  RunningDecision gone = running(1000, 700);
  gone.cancelled = true;  // the next step stops it anyway
  EXPECT_FALSE(plan_admission(1, std::vector{gone}, queue).suspend);
}

TEST(SchedulerAdmission, OneSlotNeverSuspendsTwoAtOnce) {
  RunningDecision held = running(4000, 3000);
  held.suspended = true;
  const std::vector<RunningDecision> two = {held, running(1000, 700)};
  const Admission a = plan_admission(1, two, std::vector{waiting(10, false)});
  EXPECT_FALSE(a.suspend);
  EXPECT_TRUE(a.begin.empty());
  EXPECT_FALSE(a.resume);
}

TEST(SchedulerAdmission, WithOneSuspendedTheShorterOnesThatWereWaitingGoFirstThenItResumes) {
  RunningDecision held = running(1000, 700);
  held.suspended = true;
  const std::vector<RunningDecision> one = {held};
  // A short request that came after the suspension does not keep it out (no starvation); a
  // long one that was waiting does not pass it either.
  Admission a = plan_admission(
      1, one, std::vector{waiting(900, true), waiting(10, false), waiting(20, true)});
  EXPECT_EQ(a.begin, (Indexes{2}));
  EXPECT_FALSE(a.resume);
  a = plan_admission(1, one, std::vector{waiting(900, true), waiting(10, false)});
  EXPECT_TRUE(a.begin.empty());
  ASSERT_TRUE(a.resume);
  EXPECT_EQ(*a.resume, 0u);
}

TEST(SchedulerStep, OneSlotStepsTheRunningOneInPausablePiecesOrWholeBatchesWhileOneWaits) {
  StepPlan s = plan_step(slots(1), std::vector{running(1000, 700)});
  EXPECT_EQ(s.advance, (Indexes{0}));
  EXPECT_EQ(s.most_tokens, clef::backbone::kPausablePiece);
  RunningDecision held = running(4000, 3000);
  held.suspended = true;
  s = plan_step(slots(1), std::vector{held, running(100, 100, false)});
  EXPECT_EQ(s.advance, (Indexes{1}));
  EXPECT_EQ(s.most_tokens, clef::backbone::kWholeBatches);  // it cannot be suspended in turn
  s = plan_step(slots(1), std::vector{held});
  EXPECT_TRUE(s.advance.empty());
}

TEST(SchedulerStep, SeveralSlotsLetMuchShorterOnesGoFirstButNotForever) {
  std::vector<RunningDecision> mix = {running(2000, 1500), running(100, 60), running(200, 119)};
  StepPlan s = plan_step(slots(4), mix);
  // 1,500 left is at least twice the fewest (60): it sits out; 119 is not: it goes.
  EXPECT_EQ(s.advance, (Indexes{1, 2}));
  EXPECT_EQ(s.most_tokens, clef::backbone::kPausablePiece);
  mix[0].steps_out = kMostStepsOut;
  EXPECT_EQ(plan_step(slots(4), mix).advance, (Indexes{0, 1, 2}));
  mix[0].steps_out = 0;
  mix[0].cancelled = true;  // a gone client's decision steps so that the step stops it
  EXPECT_EQ(plan_step(slots(4), mix).advance, (Indexes{0, 1, 2}));
  mix[0].cancelled = false;
  mix[1].tokens_left = 0;  // prefilled: its 0 left makes every unprefilled one wait a step
  EXPECT_EQ(plan_step(slots(4), mix).advance, (Indexes{1}));
}

/// The plan names the image the vision tower encodes: at most one a step (an encode cannot be
/// interrupted), that of the first advancing decision with images left; none that sits out or is
/// suspended.
TEST(SchedulerStep, ThePlanNamesAtMostOneImageToEncode) {
  std::vector<RunningDecision> mix = {running(2000, 1500), running(100, 60), running(200, 119)};
  mix[0].images_left = 2;  // sits out this step
  mix[2].images_left = 3;
  StepPlan s = plan_step(slots(4), mix);
  EXPECT_EQ(s.advance, (Indexes{1, 2}));
  EXPECT_EQ(s.encode, 2u);
  mix[1].images_left = 1;
  EXPECT_EQ(plan_step(slots(4), mix).encode, 1u);
  mix[1].images_left = mix[2].images_left = 0;
  EXPECT_FALSE(plan_step(slots(4), mix).encode);
  RunningDecision held = running(4000, 3000);
  held.suspended = true;
  held.images_left = 1;
  EXPECT_FALSE(plan_step(slots(1), std::vector{held, running(100, 100, false)}).encode);
  RunningDecision images = running(900, 900, false);
  images.images_left = 2;
  EXPECT_EQ(plan_step(slots(1), std::vector{held, images}).encode, 1u);
}

/// The step's budget is set by the plan alone: whole layout batches when one slot's loop is
/// closed (nobody can come to pass it) or the backbone takes only those (flash attention), else
/// a piece of kPausablePiece shared within one chunk among the prefills that decode a piece.
TEST(SchedulerStep, ThePlanSetsTheStepsTokenBudget) {
  StepShape closed = slots(1);
  closed.open = false;
  EXPECT_EQ(plan_step(closed, std::vector{running(1000, 700)}).most_tokens,
            clef::backbone::kWholeBatches);
  StepShape flash = slots(4);
  flash.whole_batches = true;
  const std::vector<RunningDecision> two = {running(300, 300), running(290, 290)};
  EXPECT_EQ(plan_step(flash, two).most_tokens, clef::backbone::kWholeBatches);
  StepShape small_chunk = slots(4);
  small_chunk.chunk_tokens = 64;
  // Two prefills share a 64-token chunk: 32 each; three: 21, rounded down to 16 rows.
  EXPECT_EQ(plan_step(small_chunk, two).most_tokens, 32);
  std::vector<RunningDecision> three = two;
  three.push_back(running(280, 280));
  EXPECT_EQ(plan_step(small_chunk, three).most_tokens, 16);
  // One still at its images (two left: not ready this step) and one gone do not share it.
  three[1].images_left = 2;
  three[2].cancelled = true;
  EXPECT_EQ(plan_step(small_chunk, three).most_tokens, 64);
  EXPECT_EQ(plan_step(slots(4), two).most_tokens, clef::backbone::kPausablePiece);
}

/// The plan names the prefills that start: advancing ones whose images are all encoded by the
/// end of the step's encode, not those that have started or sit out.
TEST(SchedulerStep, ThePlanNamesThePrefillsThatStart) {
  std::vector<RunningDecision> mix = {running(300, 300), running(310, 310), running(320, 320),
                                      running(2000, 2000)};
  mix[0].prefilling = true;
  mix[1].images_left = 1;  // encoded this step, then it starts
  mix[2].images_left = 2;  // not yet
  StepPlan s = plan_step(slots(4), mix);
  EXPECT_EQ(s.advance, (Indexes{0, 1, 2}));  // 2,000 left sits out
  EXPECT_EQ(s.encode, 1u);
  EXPECT_EQ(s.start, (Indexes{1}));
  mix[1].images_left = 0;
  mix[1].prefilling = true;
  s = plan_step(slots(4), mix);
  EXPECT_EQ(s.encode, 2u);
  EXPECT_TRUE(s.start.empty());
  mix[2].images_left = 0;
  EXPECT_EQ(plan_step(slots(4), mix).start, (Indexes{2}));
}

}  // namespace
