// ggml's AMX path (issue 42): with cpu_amx=on, quantized weights live in the AMX buffer type and
// the prefill's matrix products run on AMX int8 tiles. Every guarantee of the CPU path holds
// there too: one pass and any chunking give the same bits, as do the state cache's cuts and
// resumes, any thread count, and several sequences in one batch (the 3-D inputs the pinned
// tree's AMX kernels offset wrongly before cmake/patches/ggml-cpu-amx-fixes.diff); and the
// answers stay within the parity bar of the vector path's.
//
// On a CPU that reports AMX the tests run on its tiles. Elsewhere this binary runs itself again
// under the AMX emulator (tests/support/amx_emulator.cpp), which carries out the tile
// instructions as the SDM defines them and refuses what hardware refuses: an unconfigured tile
// (the GCC 12 tile-config bug) fails here as it crashes an AMX CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "device/cpu_path.hpp"
#include "support/amx_emulation.hpp"
#include "support/prefill_alone.hpp"
#include "support/q4_k_m_model.hpp"
#include "support/run_command.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/token_ids.hpp"

namespace {

const bool kEmulated = clef::test::reexec_under_amx_emulator_if_needed(CLEF_AMX_EMULATOR);

using clef::backbone::Backbone;
using clef::backbone::BackboneParams;
using clef::backbone::HiddenStates;
using clef::backbone::Prefill;
using clef::backbone::PrefillOptions;
using clef::testmodel::random_token_ids;

/// The small preset quantized to Q8_0 (seed 4), made once per process: the AMX kernels of the
/// 32-value blocks, beside Q4_K_M's K-quant kernels.
const std::string& q8_0_backbone() {
  static clef::test::TempDir dir("clef-amx-q8");
  static const std::string path = [] {
    clef::testmodel::MakeOptions o;
    o.dir = dir.path() / "model";
    o.seed = 4;
    o.preset = "small";
    o.quant = "Q8_0";
    return clef::testmodel::make_test_model(o).backbone.string();
  }();
  return path;
}

BackboneParams params(int chunk, int threads = 1, int parallel = 1) {
  BackboneParams p;
  p.context_size = 2048;
  p.threads = threads;
  p.chunk_tokens = chunk;
  p.parallel = parallel;
  p.cpu_amx = clef::device::CpuAmx::on;
  return p;
}

class AmxPathTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { clef::test::ensure_llama_backend(); }
  const std::string& model() const {
    return GetParam() == "Q8_0" ? q8_0_backbone() : clef::test::q4_k_m_backbone();
  }
};

TEST_P(AmxPathTest, IsOfferedAndItsTilesRun) {
  Backbone backbone(model(), params(64));
  EXPECT_TRUE(clef::device::amx_offered());
  EXPECT_NE(clef::device::describe_cpu_path(true).find("AMX"), std::string::npos);
  const long before = clef::test::amx_emulated_instructions();
  clef::test::hidden_states(backbone, random_token_ids(100, backbone.n_vocab(), 1));
  if (kEmulated) {
    EXPECT_GT(clef::test::amx_emulated_instructions(), before) << "no tile instruction ran";
  }
}

TEST_P(AmxPathTest, ChunkedPrefillIsBitIdenticalToOnePass) {
  Backbone one_pass(model(), params(1024));
  Backbone chunked(model(), params(64));
  for (int n : {63, 65, 129, 300}) {
    const auto ids = random_token_ids(n, chunked.n_vocab(), static_cast<std::uint32_t>(n));
    EXPECT_EQ(clef::test::hidden_states(chunked, ids).data,
              clef::test::hidden_states(one_pass, ids).data)
        << "length " << n;
  }
}

TEST_P(AmxPathTest, AlignedCutsAndAResumedSnapshotGiveTheOnePassRows) {
  Backbone backbone(model(), params(64));
  const auto a = random_token_ids(300, backbone.n_vocab(), 21);
  auto b = random_token_ids(260, backbone.n_vocab(), 22);
  std::copy(a.begin(), a.begin() + 208, b.begin());
  const std::vector<int> cuts = {32, 208};  // the state cache's cuts: multiples of 16
  PrefillOptions take;
  take.cuts = cuts;
  take.snapshot_at = cuts;
  const HiddenStates from_a = clef::test::hidden_states(backbone, a, {}, {}, take);
  EXPECT_EQ(from_a.data, clef::test::hidden_states(backbone, a).data);
  PrefillOptions warm_b;
  warm_b.cuts = cuts;
  warm_b.resume = &from_a.snapshots.at(1);
  warm_b.resume_rows = std::span<const float>(from_a.data).first(208u * backbone.n_embd());
  EXPECT_EQ(clef::test::hidden_states(backbone, b, {}, {}, warm_b).data,
            clef::test::hidden_states(backbone, b).data);
}

TEST_P(AmxPathTest, ThreadCountChangesNothing) {
  Backbone one(model(), params(64, 1));
  Backbone two(model(), params(64, 2));
  const auto ids = random_token_ids(201, one.n_vocab(), 8);
  const HiddenStates h = clef::test::hidden_states(one, ids);
  EXPECT_EQ(clef::test::hidden_states(two, ids).data, h.data);
  EXPECT_EQ(clef::test::hidden_states(one, ids).data, h.data);  // and run to run
}

TEST_P(AmxPathTest, SequencesBatchedTogetherGetTheirSoloBytes) {
  Backbone solo(model(), params(128, 1, 1));
  Backbone batched(model(), params(128, 1, 4));
  std::vector<std::vector<std::int32_t>> records;
  std::uint32_t seed = 40;
  for (int length : {300, 65, 129, 47}) {
    records.push_back(random_token_ids(length, solo.n_vocab(), seed++));
  }
  std::vector<Prefill> prefills;
  prefills.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    prefills.push_back(batched.start(records[i], {}, {}, {}, {}, static_cast<int>(i)));
  }
  std::vector<Prefill*> pointers;
  for (Prefill& p : prefills) pointers.push_back(&p);
  while (!std::all_of(pointers.begin(), pointers.end(), [](Prefill* p) { return p->done(); })) {
    clef::test::step_shared(batched, pointers);
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_TRUE(prefills[i].take().data == clef::test::hidden_states(solo, records[i]).data)
        << "record " << i << " (" << records[i].size() << " tokens) differs in a batch";
  }
}

INSTANTIATE_TEST_SUITE_P(Quantizations, AmxPathTest, ::testing::Values("Q8_0", "Q4_K_M"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

/// The answers of the AMX path (this process's: emulated or native) against the vector path's
/// (a clef process with cpu_amx=off) on the oracle fixture's first text runs: clef verify's
/// parity bar (argmax above the margin, max |dp| <= 0.01, mean <= 0.002).
TEST(AmxAnswers, AreWithinTheParityBarOfTheVectorPath) {
  const std::filesystem::path clef = std::filesystem::path(CLEF_BINARY_DIR) / "clef";
  if (!std::filesystem::exists(clef)) GTEST_SKIP() << clef << " is not built";
  clef::test::TempDir dir("clef-amx-verify");
  const std::filesystem::path model_dir =
      std::filesystem::path(clef::test::q4_k_m_backbone()).parent_path();
  const std::string common = clef.string() + " verify --model-dir " + model_dir.string() +
                             " --threads 1 --arm text --limit 3 ";
  const std::filesystem::path fixture = dir.path() / "vector.json";
  const std::string write = "env -u LD_PRELOAD " + common + "--set cpu_amx=off --write-fixture " +
                            fixture.string() + " 2>&1; echo exit=$?";
  const std::string written = clef::test::run_command(write);
  ASSERT_NE(written.find("exit=0"), std::string::npos) << written;
  // this process's environment: the emulator preloaded where the CPU lacks AMX
  const std::string check = common + "--set cpu_amx=on --max-dp 0.01 --fixture " +
                            fixture.string() + " 2>&1; echo exit=$?";
  const std::string report = clef::test::run_command(check);
  EXPECT_NE(report.find("exit=0"), std::string::npos) << report;
  EXPECT_NE(report.find("PASS"), std::string::npos) << report;
}

}  // namespace
