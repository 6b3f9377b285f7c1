// The joint schema head's forward pass against the reference PyTorch outputs
// (tests/data/oracle/head/README.md): every record of every configuration, with the F32 weights
// (vs logits_f32) and the BF16 weights widened to f32 (vs logits_bf16weights_f32math).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "head/head_weights.hpp"
#include "head/joint_schema_head.hpp"
#include "oracle_reader.hpp"

namespace clef::head {
namespace {

namespace fs = std::filesystem;
using testing::OracleRecord;

// README "Results": about 1e-5 absolute against logits_f32, plus about 1e-6 relative for the
// clamped set (logits up to about +-37).
constexpr double kAbsTol = 1e-5;
constexpr double kRelTol = 1e-6;

struct ErrorStats {
  double max_vs_ref = 0.0;
  double max_vs_f64 = 0.0;
  double max_vs_f32 = 0.0;
  double max_tol_use = 0.0;  ///< max of |err| / tolerance
  std::size_t n = 0;
};

/// Compares `got` with `ref` (asserting the tolerance) and accumulates the error statistics.
void compare(const std::vector<std::vector<float>>& got, const OracleRecord& rec,
             const std::vector<std::vector<double>>& ref, ErrorStats& stats) {
  ASSERT_EQ(got.size(), ref.size());
  for (std::size_t q = 0; q < got.size(); ++q) {
    ASSERT_EQ(got[q].size(), ref[q].size()) << rec.name << " question " << q;
    for (std::size_t j = 0; j < got[q].size(); ++j) {
      const double v = got[q][j];
      const double err = std::abs(v - ref[q][j]);
      const double tol = kAbsTol + kRelTol * std::abs(ref[q][j]);
      stats.max_tol_use = std::max(stats.max_tol_use, err / tol);
      EXPECT_LE(err, tol) << rec.name << " question " << q << " option " << j << ": got " << v
                          << ", expected " << ref[q][j];
      stats.max_vs_ref = std::max(stats.max_vs_ref, err);
      stats.max_vs_f64 = std::max(stats.max_vs_f64, std::abs(v - rec.logits_f64[q][j]));
      stats.max_vs_f32 = std::max(stats.max_vs_f32, std::abs(v - rec.logits_f32[q][j]));
      ++stats.n;
    }
  }
}

/// Runs every rec* of one configuration directory with both weight files and checks the logits.
void check_config(const fs::path& dir) {
  SCOPED_TRACE(dir.string());
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is not a directory";
  const auto recs = testing::record_dirs(dir);
  ASSERT_FALSE(recs.empty()) << "no rec* directories in " << dir;
  const HeadWeights w32 =
      HeadWeights::load(dir / "joint_head_f32.safetensors", dir / "joint_head_config.json");
  const HeadWeights w16 =
      HeadWeights::load(dir / "joint_head_bf16.safetensors", dir / "joint_head_config.json");
  const std::int64_t h = w32.config().hidden_size;
  const auto table = testing::read_lexical_table(dir);
  ASSERT_EQ(table.size() % static_cast<std::size_t>(h), 0u);
  JointSchemaHead head32(w32, 2);
  JointSchemaHead head16(w16, 2);

  ErrorStats f32, bf16;
  for (const auto& rd : recs) {
    const OracleRecord rec = testing::read_record(rd);
    ASSERT_EQ(rec.hidden_size, h);
    const auto lex = testing::lexical_vectors(rec, table, h);
    compare(head32.forward(rec.hidden, rec.n_tokens, rec.questions, lex), rec, rec.logits_f32, f32);
    compare(head16.forward(rec.hidden, rec.n_tokens, rec.questions, lex), rec, rec.logits_bf16,
            bf16);
  }
  std::printf(
      "[head oracle] %s: %zu records, %zu logits; F32 weights: max|err| vs logits_f32 %.3g, vs "
      "logits_f64 %.3g; BF16 weights: max|err| vs logits_bf16weights_f32math %.3g (vs "
      "logits_f32 %.3g); largest |err|/tolerance %.2f / %.2f\n",
      dir.string().c_str(), recs.size(), f32.n, f32.max_vs_ref, f32.max_vs_f64, bf16.max_vs_ref,
      bf16.max_vs_f32, f32.max_tol_use, bf16.max_tol_use);
  const std::string tag = dir.filename().string();
  ::testing::Test::RecordProperty(tag + "_max_err_f32", std::to_string(f32.max_vs_ref));
  ::testing::Test::RecordProperty(tag + "_max_err_f32_vs_f64", std::to_string(f32.max_vs_f64));
  ::testing::Test::RecordProperty(tag + "_max_err_bf16", std::to_string(bf16.max_vs_ref));
}

/// The configurations bundled in tests/data/oracle/head (tiny, small).
class HeadOracle : public ::testing::TestWithParam<fs::path> {};

TEST_P(HeadOracle, LogitsMatchReference) {
  check_config(GetParam());
}

std::string config_name(const ::testing::TestParamInfo<fs::path>& info) {
  std::string s = info.param.filename().string();
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Bundled, HeadOracle, ::testing::ValuesIn(testing::bundled_config_dirs()),
                         config_name);

// Held-out configurations (such as tiny_clamped) named by CLEF_EXTRA_HEAD_ORACLES at run time
// (colon-separated directories with the bundled layout). Read when the test runs, not when the
// tests are listed, so the variable only needs to be set for ctest / the test binary.
TEST(HeadOracleExtra, LogitsMatchReference) {
  const auto dirs = testing::extra_config_dirs();
  if (dirs.empty()) GTEST_SKIP() << "CLEF_EXTRA_HEAD_ORACLES is not set";
  for (const auto& dir : dirs) check_config(dir);
}

// Forward time of the longest record (small/rec07, T = 1500), after one warm-up call.
TEST(HeadTiming, SmallRec07) {
  const fs::path dir = fs::path(CLEF_TEST_DATA) / "oracle" / "head" / "small";
  const HeadWeights w =
      HeadWeights::load(dir / "joint_head_f32.safetensors", dir / "joint_head_config.json");
  const OracleRecord rec = testing::read_record(dir / "rec07");
  const auto lex = testing::lexical_vectors(rec, testing::read_lexical_table(dir), 256);
  for (int threads : {1, 2}) {
    JointSchemaHead head(w, threads);
    const auto first = head.forward(rec.hidden, rec.n_tokens, rec.questions, lex);
    constexpr int kRuns = 5;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRuns; ++i) {
      // Reusing the allocator must give the same numbers, bit for bit.
      EXPECT_EQ(head.forward(rec.hidden, rec.n_tokens, rec.questions, lex), first);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        kRuns;
    std::printf("[head timing] small/rec07 T=%lld, %d thread(s): %.2f ms per forward\n",
                static_cast<long long>(rec.n_tokens), threads, ms);
  }
}

}  // namespace
}  // namespace clef::head
