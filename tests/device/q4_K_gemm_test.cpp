// ggml's repacked Q4_K x Q8_K GEMM (ggml_gemm_q4_K_8x8_q8_K, the CPU's hot loop on Q4_K
// backbones) against its arithmetic spelled out here. clef patches the pinned tree with an
// AVX-512 VNNI kernel (cmake/patches/ggml-cpu-q4_K-gemm-avx512-vnni.diff) that must give the bits
// of the kernel it replaces: per row r, column c and pair of sub-blocks, the exact int32
//   I = scale0 * dot0 + scale1 * dot1   (dot: 32 products of a 4-bit weight and an int8 activation)
//   Imin = bsum0 * min0 + bsum1 * min1  (bsums summed in int16 as the kernels do)
// accumulated as acc = fma(float(I), d_c * d_r, acc) and acc_min = fma(float(Imin), dmin_c * d_r,
// acc_min) over superblocks and pairs in order, the result acc - acc_min. Shapes cover every row
// tile (64, 16, 4 rows) and the column counts the old kernel keeps (not a multiple of 16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "ggml.h"

namespace {

constexpr int kQK = 256;  // QK_K

// The interleaved blocks of the pinned tree's ggml-cpu/repack.h.
struct BlockQ4Kx8 {
  ggml_fp16_t d[8];
  ggml_fp16_t dmin[8];
  std::uint8_t scales[96];  // per sub-block: 12 bytes of 8 columns' 6-bit scales and mins
  std::uint8_t qs[1024];    // per pair of sub-blocks: [4 groups][8 columns][8 bytes]
};
static_assert(sizeof(BlockQ4Kx8) == 2 * 16 + 96 + 1024);

struct BlockQ8Kx4 {
  float d[4];
  std::int8_t qs[kQK * 4];  // per pair of sub-blocks: [2 sub-blocks][4 groups][4 rows][8 values]
  std::int16_t bsums[kQK / 4];
};
static_assert(sizeof(BlockQ8Kx4) == 16 + 1024 + 128);

extern "C" void ggml_gemm_q4_K_8x8_q8_K(int n, float* s, std::size_t bs, const void* vx,
                                        const void* vy, int nr, int nc);

/// The 6-bit scale (or min, `min` true) of column j in the 12 bytes of one sub-block (ggml's
/// get_scale_min_k4 order after the kernels' kmask unpacking).
int scale_or_min(const std::uint8_t* group, int j, bool min) {
  std::uint32_t u[4];
  std::memcpy(u, group, 12);
  const std::uint32_t aux = u[1] & 0x3f3f3f3f;
  u[3] = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
  u[1] = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
  u[2] = aux;
  u[0] &= 0x3f3f3f3f;
  std::uint8_t bytes[16];
  std::memcpy(bytes, u, 16);
  return bytes[(min ? 8 : 0) + j];
}

float reference(const std::vector<BlockQ4Kx8>& w, const std::vector<BlockQ8Kx4>& a, int nb, int r,
                int c) {
  const int m = r % 4;
  const int j = c % 8;
  float acc = 0.0f;
  float acc_min = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const BlockQ4Kx8& wb = w[static_cast<std::size_t>(c / 8) * nb + b];
    const BlockQ8Kx4& ab = a[static_cast<std::size_t>(r / 4) * nb + b];
    const float col_scale = ggml_fp16_to_fp32(wb.d[j]);
    const float col_dmin = ggml_fp16_to_fp32(wb.dmin[j]);
    for (int sb = 0; sb < 4; ++sb) {
      std::int32_t dot[2] = {0, 0};
      for (int half = 0; half < 2; ++half) {
        for (int t = 0; t < 4; ++t) {
          for (int i = 0; i < 8; ++i) {
            const std::uint8_t packed = wb.qs[sb * 256 + t * 64 + j * 8 + i];
            const int q4 = half == 0 ? packed & 0x0F : packed >> 4;
            dot[half] += q4 * ab.qs[sb * 256 + half * 128 + t * 32 + m * 8 + i];
          }
        }
      }
      const std::uint8_t* g0 = wb.scales + 24 * sb;
      const std::uint8_t* g1 = g0 + 12;
      const std::int32_t isum =
          scale_or_min(g0, j, false) * dot[0] + scale_or_min(g1, j, false) * dot[1];
      // The kernels add neighbouring bsums in int16 (_mm_hadd_epi16): row m's sub-blocks are
      // pair entries 2m and 2m + 1 of the pair's 16 bsums.
      const std::int16_t* bs = ab.bsums + 16 * sb;
      const auto pair = [&](int k) { return static_cast<std::int16_t>(bs[2 * k] + bs[2 * k + 1]); };
      const std::int32_t imin =
          pair(2 * m) * scale_or_min(g0, j, true) + pair(2 * m + 1) * scale_or_min(g1, j, true);
      acc = std::fma(static_cast<float>(isum), col_scale * ab.d[m], acc);
      acc_min = std::fma(static_cast<float>(imin), col_dmin * ab.d[m], acc_min);
    }
  }
  return acc - acc_min;
}

struct Shape {
  int k;
  int rows;
  int cols;
};

class Q4KGemm : public testing::TestWithParam<Shape> {};

TEST_P(Q4KGemm, GivesItsArithmeticBitForBit) {
  const auto [k, nr, nc] = GetParam();
  const int nb = k / kQK;
  std::mt19937 rng(static_cast<unsigned>(k * 131 + nr * 7 + nc));
  std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
  std::vector<BlockQ4Kx8> w(static_cast<std::size_t>(nc / 8) * nb);
  std::vector<BlockQ8Kx4> a(static_cast<std::size_t>(nr / 4) * nb);
  for (BlockQ4Kx8& b : w) {
    for (int i = 0; i < 8; ++i) {
      b.d[i] = ggml_fp32_to_fp16(scale(rng));
      b.dmin[i] = ggml_fp32_to_fp16(scale(rng));
    }
    for (std::uint8_t& x : b.scales) x = static_cast<std::uint8_t>(rng());
    for (std::uint8_t& x : b.qs) x = static_cast<std::uint8_t>(rng());
  }
  for (BlockQ8Kx4& b : a) {
    for (float& d : b.d) d = scale(rng);
    // the full int8 range, -128 included, and bsums as large as 16 such values can sum to
    for (std::int8_t& x : b.qs) x = static_cast<std::int8_t>(static_cast<int>(rng() % 256) - 128);
    for (std::int16_t& x : b.bsums)
      x = static_cast<std::int16_t>(static_cast<int>(rng() % 4097) - 2048);
  }
  std::vector<float> out(static_cast<std::size_t>(nr) * nc, NAN);
  ggml_gemm_q4_K_8x8_q8_K(k, out.data(), static_cast<std::size_t>(nc), w.data(), a.data(), nr, nc);
  int differing = 0;
  for (int r = 0; r < nr; ++r) {
    for (int c = 0; c < nc; ++c) {
      const float want = reference(w, a, nb, r, c);
      const float got = out[static_cast<std::size_t>(r) * nc + c];
      if (std::memcmp(&want, &got, sizeof(float)) != 0 && ++differing <= 5) {
        ADD_FAILURE() << "row " << r << " column " << c << ": " << got << " (want " << want << ")";
      }
    }
  }
  EXPECT_EQ(differing, 0) << "of " << nr * nc;
}

INSTANTIATE_TEST_SUITE_P(RowTilesAndColumnCounts, Q4KGemm,
                         testing::Values(Shape{256, 4, 16}, Shape{512, 8, 32}, Shape{1024, 12, 16},
                                         Shape{256, 20, 48}, Shape{512, 64, 16}, Shape{256, 68, 32},
                                         Shape{256, 132, 16}, Shape{1024, 260, 32},
                                         Shape{256, 16, 8}, Shape{512, 68, 24}),
                         [](const testing::TestParamInfo<Shape>& info) {
                           std::ostringstream name;
                           name << 'k' << info.param.k << "_rows" << info.param.rows << "_cols"
                                << info.param.cols;
                           return name.str();
                         });

}  // namespace
