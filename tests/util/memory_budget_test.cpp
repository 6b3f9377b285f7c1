// The preparation memory budget (issue 52, item 2): one request past its share gets 413, all of
// them past the total 429, each naming its limit and flag; a lease gives back what it holds.

#include "util/memory_budget.hpp"

#include <gtest/gtest.h>

#include <string>

#include "util/error.hpp"

namespace clef::util {
namespace {

TEST(MemoryBudget, OneRequestPastItsShareIs413NamingTheFlag) {
  MemoryBudget budget(1000, 400);
  auto lease = budget.lease();
  lease->charge(300);
  try {
    lease->charge(101);
    ADD_FAILURE() << "charged past the per-request limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_EQ(e.code(), "request_too_large");
    EXPECT_NE(std::string(e.what()).find("--prepare-memory-per-request"), std::string::npos);
  }
  EXPECT_EQ(lease->held(), 300u);  // nothing taken when it throws
  EXPECT_EQ(budget.in_use(), 300u);
  lease->charge(100);  // up to the limit is fine
  EXPECT_EQ(budget.in_use(), 400u);
}

TEST(MemoryBudget, AllRequestsPastTheTotalAre429AndLeasesGiveBackWhatTheyHold) {
  MemoryBudget budget(1000, 600);
  auto a = budget.lease();
  auto b = budget.lease();
  a->charge(600);
  b->charge(300);
  try {
    b->charge(200);
    ADD_FAILURE() << "charged past the total";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_EQ(e.code(), "preparation_memory_full");
    EXPECT_NE(std::string(e.what()).find("--prepare-memory"), std::string::npos);
  }
  a.reset();  // a request done preparing returns all it held
  EXPECT_EQ(budget.in_use(), 300u);
  b->charge(200);
  const MemoryCharge charge = b->as_charge();
  charge(100);
  charge(-250);
  EXPECT_EQ(b->held(), 350u);
  EXPECT_EQ(b->peak(), 600u);
  charge(-10000);  // never below zero
  EXPECT_EQ(b->held(), 0u);
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(MemoryBudget, ZeroMeansNoLimit) {
  MemoryBudget budget(0, 0);
  auto lease = budget.lease();
  lease->charge(std::size_t{1} << 40);
  EXPECT_EQ(budget.in_use(), std::size_t{1} << 40);
}

}  // namespace
}  // namespace clef::util
