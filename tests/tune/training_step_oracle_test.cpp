// The head's training step against the authors' JointSchemaHead under torch autograd
// (tests/data/oracle/tune/README.md): the Brier loss, every parameter's gradient at the initial
// weights, the global gradient norm, and the loss and parameters after a few clipped AdamW steps.
// Cases: the bundled ones, and every case folder below the directories of CLEF_EXTRA_TUNE_ORACLES.

#include <gtest/gtest.h>

#include "support/oracle_dirs.hpp"
#include "tune/tune_case.hpp"

namespace clef::tune {
namespace {

using testing::check_case;
using testing::Graphs;
namespace fs = std::filesystem;

std::vector<fs::path> bundled_cases() {
  return test::tune_case_dirs(fs::path(CLEF_TEST_DATA) / "oracle" / "tune");
}

TEST(TuneOracle, BundledCasesAreThere) {
  EXPECT_EQ(bundled_cases().size(), 3u);
}

TEST(TuneOracle, EveryBundledCaseMatchesTheAuthorsStep) {
  for (const fs::path& dir : bundled_cases()) check_case(dir, Graphs::per_record);
}

// clef tune's batches run as one graph (the records' rows concatenated, attention masked to each
// record's own): the same gradients and steps within the same tolerances.
TEST(TuneOracle, EveryBundledCaseMatchesTheAuthorsStepInOneGraph) {
  for (const fs::path& dir : bundled_cases()) check_case(dir, Graphs::one_graph);
}

TEST(TuneOracle, HeldOutCases) {
  const auto dirs = test::extra_tune_case_dirs();
  if (dirs.empty()) GTEST_SKIP() << "CLEF_EXTRA_TUNE_ORACLES is not set";
  for (const fs::path& dir : dirs) {
    check_case(dir, Graphs::per_record);
    check_case(dir, Graphs::one_graph);
  }
}

}  // namespace
}  // namespace clef::tune
