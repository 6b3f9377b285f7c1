// ggml's repacked Q6_K x Q8_K GEMM and GEMV on x86 (cmake/patches/ggml-cpu-q6_K-gemm-avx512-
// vnni.diff, ggml-cpu-x86-q6_K-requantized-strip.diff: clef's AVX-512 VNNI kernels, so that x86
// repacks the Q6_K tensors of a Q4_K_M model) against their arithmetic spelled out here, bit for
// bit, in every column strip (64, 32, 16 and a last 8 columns), row counts from one tile of 4 up,
// and for one row. Each column's superblock is requantized to 8 bits: with S the largest |scale|,
// T_s = nearest-even(float(1016 scale_s) / float(max(S, 1))) and
// w8 = (((q6 - 32) T_s + 128) >> 8) + 128,
//   I = sum over a superblock's 256 values of w8 * a - 128 * sum(a)   (exact)
//   acc = fma(float(I), ((d_column * float(32 S)) / 127) * d_row, acc), superblock after
//   superblock;
// and the weights as the kernels read them against ggml's own dequantize_row_q6_K of the same
// column (de-interleaved as the repack interleaves it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"

namespace {

constexpr int kQK = 256;

// The blocks of the pinned tree's ggml-common.h and ggml-cpu/repack.h.
struct BlockQ6K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  ggml_fp16_t d;
};
struct BlockQ6Kx8 {
  ggml_fp16_t d[8];
  std::int8_t scales[128];  // scales[sub-block * 8 + column]
  std::uint8_t ql[1024];    // 8 bytes of each column in turn
  std::uint8_t qh[512];
};
struct BlockQ8Kx4 {
  float d[4];
  std::int8_t qs[kQK * 4];      // value l of row m at (l / 8) * 32 + m * 8 + l % 8
  std::int16_t bsums[kQK / 4];  // sub-block s of row m at (s / 4) * 16 + m * 4 + s % 4
};
struct BlockQ8K {
  float d;
  std::int8_t qs[kQK];
  std::int16_t bsums[kQK / 16];
};
static_assert(sizeof(BlockQ6K) == 210 && sizeof(BlockQ6Kx8) == 16 + 128 + 1536);
static_assert(sizeof(BlockQ8Kx4) == 16 + 1024 + 128 && sizeof(BlockQ8K) == 4 + 256 + 32);

extern "C" {
void ggml_gemm_q6_K_8x8_q8_K(int n, float* s, std::size_t bs, const void* vx, const void* vy,
                             int nr, int nc);
void ggml_gemv_q6_K_8x8_q8_K(int n, float* s, std::size_t bs, const void* vx, const void* vy,
                             int nr, int nc);
void dequantize_row_q6_K(const BlockQ6K* x, float* y, std::int64_t k);
}

/// Column c's value l (0..63) of a block_q6_Kx8.
int q6(const BlockQ6Kx8& b, int c, int l) {
  const int half = l / 128, in_half = l % 128, q = half * 64 + in_half % 64;
  const std::uint8_t byte = b.ql[(q / 8) * 64 + c * 8 + q % 8];
  const int low4 = in_half < 64 ? byte & 0x0F : byte >> 4;
  const int r = half * 32 + in_half % 32;
  const int high2 = (b.qh[(r / 8) * 64 + c * 8 + r % 8] >> (2 * (in_half / 32))) & 3;
  return low4 | (high2 << 4);
}

struct Data {
  int k, rows, cols, nb;
  std::vector<BlockQ6Kx8> w;
  std::vector<BlockQ8Kx4> a;
  int8_t act(int r, int b, int l) const {
    return a[static_cast<std::size_t>(r / 4) * nb + b].qs[(l / 8) * 32 + (r % 4) * 8 + l % 8];
  }
  const BlockQ6Kx8& wb(int c, int b) const { return w[static_cast<std::size_t>(c / 8) * nb + b]; }
};

Data make(int k, int rows, int cols) {
  Data d{k, rows, cols, k / kQK, {}, {}};
  std::mt19937 rng(static_cast<unsigned>(k * 131 + rows * 7 + cols));
  std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
  d.w.resize(static_cast<std::size_t>(cols / 8) * d.nb);
  d.a.resize(static_cast<std::size_t>((rows + 3) / 4) * d.nb);
  for (BlockQ6Kx8& b : d.w) {
    for (ggml_fp16_t& x : b.d) x = ggml_fp32_to_fp16(scale(rng));
    for (std::int8_t& x : b.scales) x = static_cast<std::int8_t>(rng());
    for (std::uint8_t& x : b.ql) x = static_cast<std::uint8_t>(rng());
    for (std::uint8_t& x : b.qh) x = static_cast<std::uint8_t>(rng());
  }
  // Column 0 of the first block with a scale of -128 (S = 128) beside small ones; column 1 of the
  // next with all scales 0 (S = 0).
  for (int s = 0; s < 16; ++s) {
    d.w[0].scales[s * 8] = static_cast<std::int8_t>(s == 3 ? -128 : s - 8);
    if (d.w.size() > 1) d.w[1].scales[s * 8 + 1] = 0;
  }
  for (BlockQ8Kx4& b : d.a) {
    for (float& x : b.d) x = scale(rng);
    for (std::int8_t& x : b.qs) x = static_cast<std::int8_t>(static_cast<int>(rng() % 256) - 128);
    for (int m = 0; m < 4; ++m) {
      for (int s = 0; s < 16; ++s) {
        int sum = 0;
        for (int l = 16 * s; l < 16 * s + 16; ++l) sum += b.qs[(l / 8) * 32 + m * 8 + l % 8];
        b.bsums[(s / 4) * 16 + m * 4 + s % 4] = static_cast<std::int16_t>(sum);
      }
    }
  }
  return d;
}

float reference(const Data& d, int r, int c) {
  float acc = 0.0f;
  for (int b = 0; b < d.nb; ++b) {
    const BlockQ6Kx8& w = d.wb(c, b);
    int largest = 0;  // S
    for (int s = 0; s < 16; ++s)
      largest = std::max(largest, std::abs(static_cast<int>(w.scales[s * 8 + c % 8])));
    std::int64_t sum = 0;
    for (int l = 0; l < kQK; ++l) {
      const int scale = w.scales[(l / 16) * 8 + c % 8];
      const int t = static_cast<int>(std::nearbyint(static_cast<float>(1016 * scale) /
                                                    static_cast<float>(std::max(largest, 1))));
      const int w8 = (((q6(w, c % 8, l) - 32) * t + 128) >> 8) + 128;
      sum += static_cast<std::int64_t>(w8 - 128) * d.act(r, b, l);
    }
    const float d_row = d.a[static_cast<std::size_t>(r / 4) * d.nb + b].d[r % 4];
    const float step = (ggml_fp16_to_fp32(w.d[c % 8]) * static_cast<float>(32 * largest)) / 127.0f;
    acc = std::fma(static_cast<float>(sum), step * d_row, acc);
  }
  return acc;
}

struct Shape {
  int k, rows, cols;
};

class Q6KGemm : public testing::TestWithParam<Shape> {};

TEST_P(Q6KGemm, GemmAndGemvGiveTheirArithmeticBitForBit) {
  // ggml-cpu's own build flags: the kernels exist where it was built with AVX-512 VNNI.
  if (ggml_cpu_has_avx512_vnni() == 0) GTEST_SKIP() << "ggml-cpu has no AVX-512 VNNI Q6_K kernels";
  const auto [k, rows, cols] = GetParam();
  const Data d = make(k, rows, cols);
  std::vector<float> out(static_cast<std::size_t>(rows) * cols, NAN);
  ggml_gemm_q6_K_8x8_q8_K(k, out.data(), static_cast<std::size_t>(cols), d.w.data(), d.a.data(),
                          rows, cols);
  int differing = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const float want = reference(d, r, c);
      const float got = out[static_cast<std::size_t>(r) * cols + c];
      if (std::memcmp(&want, &got, 4) != 0 && ++differing <= 5) {
        ADD_FAILURE() << "gemm row " << r << " column " << c << ": " << got << " want " << want;
      }
    }
  }
  EXPECT_EQ(differing, 0) << "of " << rows * cols;
  // The same rows one at a time through the GEMV (block_q8_K rows): the same bits.
  for (int r = 0; r < std::min(rows, 5); ++r) {
    std::vector<BlockQ8K> row(static_cast<std::size_t>(d.nb));
    for (int b = 0; b < d.nb; ++b) {
      const BlockQ8Kx4& x4 = d.a[static_cast<std::size_t>(r / 4) * d.nb + b];
      row[b].d = x4.d[r % 4];
      for (int l = 0; l < kQK; ++l) row[b].qs[l] = d.act(r, b, l);
      for (int s = 0; s < 16; ++s) row[b].bsums[s] = x4.bsums[(s / 4) * 16 + (r % 4) * 4 + s % 4];
    }
    std::vector<float> one(static_cast<std::size_t>(cols), NAN);
    ggml_gemv_q6_K_8x8_q8_K(k, one.data(), 0, d.w.data(), row.data(), 1, cols);
    for (int c = 0; c < cols; ++c) {
      const float want = out[static_cast<std::size_t>(r) * cols + c];
      EXPECT_EQ(std::memcmp(&want, &one[c], 4), 0)
          << "gemv row " << r << " column " << c << ": " << one[c] << " gemm " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RowTilesAndColumnCounts, Q6KGemm,
                         testing::Values(Shape{256, 4, 16}, Shape{512, 8, 8}, Shape{256, 20, 24},
                                         Shape{512, 64, 16}, Shape{256, 68, 40},
                                         Shape{1024, 132, 16}, Shape{512, 8, 64},
                                         Shape{256, 12, 120}, Shape{768, 36, 200}),
                         [](const testing::TestParamInfo<Shape>& info) {
                           std::ostringstream name;
                           name << 'k' << info.param.k << "_rows" << info.param.rows << "_cols"
                                << info.param.cols;
                           return name.str();
                         });

TEST(Q6KLayout, TheKernelsValuesAreGgmlsDequantization) {
  const Data d = make(512, 4, 16);
  for (int c = 0; c < 16; ++c) {
    for (int b = 0; b < d.nb; ++b) {
      // Column c of the interleaved block, back in ggml's block_q6_K (make_block_q6_Kx8 takes 8
      // bytes of each column in turn, for ql and qh alike).
      const BlockQ6Kx8& w = d.wb(c, b);
      BlockQ6K one{};
      one.d = w.d[c % 8];
      for (int i = c % 8; i < 128; i += 8) std::memcpy(one.ql + (i / 8) * 8, w.ql + i * 8, 8);
      for (int i = c % 8; i < 64; i += 8) std::memcpy(one.qh + (i / 8) * 8, w.qh + i * 8, 8);
      for (int s = 0; s < 16; ++s) one.scales[s] = w.scales[s * 8 + c % 8];
      float values[kQK];
      dequantize_row_q6_K(&one, values, kQK);
      for (int l = 0; l < kQK; ++l) {
        const float want = ggml_fp16_to_fp32(w.d[c % 8]) * w.scales[(l / 16) * 8 + c % 8] *
                           static_cast<float>(q6(w, c % 8, l) - 32);
        ASSERT_EQ(values[l], want) << "column " << c << " superblock " << b << " value " << l;
      }
    }
  }
}

}  // namespace
