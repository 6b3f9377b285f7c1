// The answers of the repacked kernels (clef's AVX-512 VNNI Q4_K and Q6_K GEMMs where the CPU has
// them, on weights requantized to 8 bits:
// cmake/patches/ggml-cpu-x86-q{4,6}_K-requantized-strip.diff; clef's exact AVX2 Q4_K kernel or the
// pinned tree's interleaved kernels elsewhere) against the pinned tree's plain kernels
// (weight_repacking=0: ggml's row-by-row ggml_vec_dot_q4_K_q8_K / q6_K, which clef does not patch),
// on the same rows: a Q4_K_M backbone through clef verify's parity bar (argmax equal where the
// plain answer's top-2 margin is above 0.02, max |dp| <= 0.01, mean |dp| <= 0.002; issue 51's item
// 4).
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "support/q4_k_m_model.hpp"
#include "support/run_command.hpp"
#include "support/tiny_model.hpp"

namespace {

TEST(RepackedAnswers, AreWithinTheParityBarOfThePinnedTreesPlainKernels) {
  const std::filesystem::path clef = std::filesystem::path(CLEF_BINARY_DIR) / "clef";
  if (!std::filesystem::exists(clef)) GTEST_SKIP() << clef << " is not built";
  clef::test::TempDir dir("clef-repacked-verify");
  const std::filesystem::path model_dir =
      std::filesystem::path(clef::test::q4_k_m_backbone()).parent_path();
  const std::string common = clef.string() + " verify --model-dir " + model_dir.string() +
                             " --threads 1 --arm text --limit 8 ";
  const std::filesystem::path fixture = dir.path() / "plain.json";
  const std::string written =
      clef::test::run_command(common + "--set weight_repacking=0 --write-fixture " +
                              fixture.string() + " 2>&1; echo exit=$?");
  ASSERT_NE(written.find("exit=0"), std::string::npos) << written;
  const std::string report =
      clef::test::run_command(common + "--set weight_repacking=1 --max-dp 0.01 --fixture " +
                              fixture.string() + " 2>&1; echo exit=$?");
  std::cout << "[repacked vs plain kernels]\n" << report;
  EXPECT_NE(report.find("exit=0"), std::string::npos) << report;
  EXPECT_NE(report.find("PASS"), std::string::npos) << report;
}

}  // namespace
