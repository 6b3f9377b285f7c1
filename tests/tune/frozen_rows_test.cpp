// The frozen rows' plan and an interrupted rows phase (a reported input: Ctrl-C while the backbone
// ran was ignored until every record was done).
#include "tune/frozen_rows.hpp"

#include <gtest/gtest.h>

namespace clef::tune {
namespace {

TEST(FrozenRows, AnInterruptStopsBeforeTheNextRecord) {
  runtime::Engine engine;  // never reached: the interrupt is asked first
  std::vector<PreparedRecord> records(3);
  std::size_t asked = 0;
  try {
    compute_rows(engine, std::move(records), {}, [&] { return ++asked >= 1; });
    ADD_FAILURE() << "not interrupted";
  } catch (const RowsInterrupted& i) {
    EXPECT_EQ(i.done, 0u);
    EXPECT_EQ(i.total, 3u);
  }
  EXPECT_EQ(asked, 1u);
}

TEST(FrozenRows, ThePlanSaysTheArithmetic) {
  PreparedRecord a;
  a.prepared.record.ids.assign(1000, 1);
  a.prepared.record.questions.resize(1);
  a.prepared.record.questions[0].option_ids = {"true", "false"};
  const RowsPlan plan = plan_rows({&a, &a}, 4096);
  EXPECT_EQ(plan.tokens, 2000);
  EXPECT_EQ(plan.options, 4);
  EXPECT_EQ(plan.bytes, 2004u * 4096u * 4u);
  EXPECT_EQ(plan.describe(),
            "2 records: 2,000 tokens x 4096 x 4 B + 4 option rows x 4096 x 4 B = 0.03 GiB");
}

}  // namespace
}  // namespace clef::tune
