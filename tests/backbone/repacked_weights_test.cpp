// Repacked quantized weights (the default, issue 19): a Q4_K_M backbone gives the hidden states of
// one pass however the record is chunked, cut or resumed, and with any thread count; ggml-cpu
// offers its AMX buffer type only on a CPU that reports AMX (amx_path_test.cpp tests that path);
// and repacking really runs (other kernels than plain weights, so the checks above are not
// vacuous).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backbone/backbone.hpp"
#include "device/cpu_path.hpp"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "gguf/gguf_file.hpp"
#include "support/prefill_alone.hpp"
#include "support/q4_k_m_model.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/token_ids.hpp"

namespace {

using clef::backbone::Backbone;
using clef::backbone::BackboneParams;
using clef::backbone::HiddenStates;
using clef::backbone::PrefillOptions;
using clef::testmodel::random_token_ids;

using clef::test::q4_k_m_backbone;

BackboneParams params(int chunk, int threads = 1) {
  BackboneParams p;  // weight_repacking: the default
  p.context_size = 2048;
  p.threads = threads;
  p.chunk_tokens = chunk;
  return p;
}

class RepackedWeightsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { clef::test::ensure_llama_backend(); }
};

TEST_F(RepackedWeightsTest, AreTheDefaultAndAmxOnlyWhereTheCpuHasIt) {
  EXPECT_TRUE(BackboneParams{}.weight_repacking);
  EXPECT_EQ(BackboneParams{}.cpu_amx, clef::device::CpuAmx::automatic);
  Backbone backbone(q4_k_m_backbone(), params(64));  // ggml decides about AMX at the first load
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  ASSERT_NE(cpu, nullptr);
  auto get_extra =
      reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(ggml_backend_reg_get_proc_address(
          ggml_backend_dev_backend_reg(cpu), "ggml_backend_dev_get_extra_bufts"));
  ASSERT_NE(get_extra, nullptr);
  std::vector<std::string> names;
  for (ggml_backend_buffer_type_t* b = get_extra(cpu); b != nullptr && *b != nullptr; ++b) {
    names.emplace_back(ggml_backend_buft_name(*b));
  }
  if (!clef::device::cpu_reports_amx()) {
    for (const std::string& n : names) EXPECT_EQ(n.find("AMX"), std::string::npos) << n;
  }
  if (ggml_cpu_has_avx2() != 0) {  // x86 builds have interleaved kernels from AVX2 on
    EXPECT_NE(std::find(names.begin(), names.end(), "CPU_REPACK"), names.end());
  }
}

/// Bytes of `path`'s memory maps resident in this process (the Rss lines of /proc/self/smaps).
std::uint64_t resident_bytes_of_mapping(const std::filesystem::path& path) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string target = std::filesystem::canonical(path).string();
  std::string line;
  bool inside = false;
  std::uint64_t kib = 0;
  while (std::getline(smaps, line)) {
    const std::size_t dash = line.find('-');
    if (dash != std::string::npos && dash > 0 &&
        std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(dash),
                    [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
      inside = line.size() >= target.size() &&
               line.compare(line.size() - target.size(), target.size(), target) == 0;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      std::uint64_t v = 0;
      std::istringstream(line.substr(4)) >> v;
      kib += v;
    }
  }
  return kib * 1024;
}

/// The file pages of weights copied out of the memory map (repacked for the CPU's interleaved
/// kernels) do not stay resident beside the copy (issue 44: RSS counted them twice;
/// cmake/patches/llama-release-copied-weight-pages.diff).
TEST_F(RepackedWeightsTest, TheirFilePagesDoNotStayResidentBesideTheCopy) {
  if (ggml_cpu_has_avx2() == 0) GTEST_SKIP() << "no interleaved Q4_K kernels on this CPU";
  const std::filesystem::path file = q4_k_m_backbone();
  // The Q4_K matrices of the layers: what the CPU repacks (token_embd is read by row, kept).
  std::uint64_t repackable = 0;
  for (const auto& t : clef::gguf::GgufFile(file, true).tensors()) {
    if (t.type == GGML_TYPE_Q4_K && t.ne[1] > 1 && t.ne[1] % 8 == 0 &&
        t.name.rfind("blk.", 0) == 0) {
      repackable += t.bytes;
    }
  }
  ASSERT_GT(repackable, std::uint64_t{1} << 20) << "too few repacked bytes to measure";
  std::uint64_t mapped_plain = 0;
  {
    BackboneParams plain = params(64);
    plain.weight_repacking = false;
    Backbone unpacked(file.string(), plain);
    mapped_plain = resident_bytes_of_mapping(file);
  }
  Backbone repacked(file.string(), params(64));
  const std::uint64_t mapped = resident_bytes_of_mapping(file);
  EXPECT_LE(mapped + repackable * 9 / 10, mapped_plain)
      << "resident pages of the file: " << mapped << " bytes with repacking, " << mapped_plain
      << " without; the Q4_K matrices are " << repackable << " bytes";
  const auto ids = random_token_ids(40, repacked.n_vocab(), 2);
  EXPECT_EQ(clef::test::hidden_states(repacked, ids).rows,
            40);  // the weights it uses are all there
}

TEST_F(RepackedWeightsTest, RunOtherKernelsThanPlainWeights) {
  BackboneParams plain = params(64);
  plain.weight_repacking = false;
  Backbone repacked(q4_k_m_backbone(), params(64));
  Backbone unpacked(q4_k_m_backbone(), plain);
  const auto ids = random_token_ids(100, repacked.n_vocab(), 5);
  EXPECT_NE(clef::test::hidden_states(repacked, ids).data,
            clef::test::hidden_states(unpacked, ids).data)
      << "repacking had no effect: the invariance tests below would prove nothing";
}

TEST_F(RepackedWeightsTest, ChunkedPrefillIsBitIdenticalToOnePass) {
  Backbone one_pass(q4_k_m_backbone(), params(1024));
  for (int chunk : {64, 512}) {
    Backbone chunked(q4_k_m_backbone(), params(chunk));
    // 65 and 129 end in a (48, 17) pair of batches; before the row alignment, (63, 2) gave 8e-7.
    for (int n : {63, 64, 65, 127, 128, 129, 530, 1000}) {
      const auto ids = random_token_ids(n, chunked.n_vocab(), static_cast<std::uint32_t>(n));
      EXPECT_EQ(clef::test::hidden_states(chunked, ids).data,
                clef::test::hidden_states(one_pass, ids).data)
          << "length " << n << ", chunks of " << chunk;
    }
  }
}

TEST_F(RepackedWeightsTest, BatchesOfFourRowsOrMoreGiveTheOnePassRowsAtAnyBoundary) {
  // A batch's last rows % 4 rows take the repacked GEMM as the block of its last 4 rows
  // (cmake/patches/ggml-cpu-repacked-gemm-last-rows.diff), as its other rows do, instead of a
  // GEMV each, which rounds differently: a row's result no longer depends on its place in a batch
  // of 4 rows or more. Chunks of 61 and 63 tokens leave 1 and 3 rows over in every batch.
  Backbone one_pass(q4_k_m_backbone(), params(1024));
  for (auto [chunk, n] : {std::pair{61, 65}, {61, 130}, {61, 250}, {63, 70}, {63, 130}}) {
    Backbone chunked(q4_k_m_backbone(), params(chunk));
    const auto ids = random_token_ids(n, chunked.n_vocab(), static_cast<std::uint32_t>(n));
    EXPECT_EQ(clef::test::hidden_states(chunked, ids).data,
              clef::test::hidden_states(one_pass, ids).data)
        << "length " << n << ", chunks of " << chunk;
  }
}

TEST_F(RepackedWeightsTest, AlignedCutsAndAResumedSnapshotGiveTheOnePassRows) {
  Backbone backbone(q4_k_m_backbone(), params(64));
  const auto a = random_token_ids(300, backbone.n_vocab(), 21);
  auto b = random_token_ids(260, backbone.n_vocab(), 22);
  std::copy(a.begin(), a.begin() + 208, b.begin());
  // The state cache's cuts of a text record: multiples of 16 (cache::snapshot_points).
  const std::vector<int> cuts = {32, 208};
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

TEST_F(RepackedWeightsTest, ThreadCountChangesNothing) {
  Backbone one(q4_k_m_backbone(), params(64, 1));
  Backbone two(q4_k_m_backbone(), params(64, 2));
  Backbone three(q4_k_m_backbone(), params(64, 3));
  const auto ids = random_token_ids(301, one.n_vocab(), 8);
  const HiddenStates h = clef::test::hidden_states(one, ids);
  EXPECT_EQ(clef::test::hidden_states(two, ids).data, h.data);
  EXPECT_EQ(clef::test::hidden_states(three, ids).data, h.data);
  EXPECT_EQ(clef::test::hidden_states(one, ids).data, h.data);  // and run to run
}

}  // namespace
