// ggml's repacked Q4_K x Q8_K GEMM (ggml_gemm_q4_K_8x8_q8_K, the CPU's hot loop on Q4_K
// backbones) against its arithmetic spelled out here. clef patches the pinned tree with AVX-512
// VNNI and AVX2 kernels (cmake/patches/ggml-cpu-q4_K-gemm-x86.diff,
// ggml-cpu-x86-q4_K-requantized-strip.diff). The AVX2 kernel (with and without AVX-VNNI) gives,
// per row r, column c and superblock, the exact int32
//   I  = sum over the 8 sub-blocks of scale * dot  (dot: 32 products of a 4-bit weight and an
//        int8 activation)
//   Mn = sum over the 8 sub-blocks of min * bsum   (a sub-block's two bsums added in int16)
// accumulated as acc = fma(float(I), d_c * d_r, acc), then acc = fma(-float(Mn), dmin_c * d_r,
// acc), superblock after superblock. The AVX-512 VNNI kernel requantizes each column's superblock
// to 8 bits first (no sub-block scale left in its tile): with S the largest sub-block scale,
// T_j = nearest-even(float(2176 scale_j) / float(max(S, 1))) and w8 = (q T_j + 64) >> 7, it sums
//   I  = sum over the 256 values of w8 * activation, the same Mn,
// and accumulates fma(float(I), ((d_c * S) / 17) * d_r, acc), then the same min term. Shapes cover
// every column strip (64, 32, 16 and a last 8 columns) and row counts from one tile of 4 up; the
// binaries clef_q4_K_gemm_{avx2,avx2_vnni}_tests compile the AVX2 kernel in
// (gemm_kernel_variant.hpp). (A CPU with AVX-512 but not its VNNI runs the pinned tree's own
// kernels, whose arithmetic differs: the test skips there.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device/gemm_kernel_variant.hpp"
#include "ggml-cpu.h"
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

/// Whether this binary runs the AVX-512 VNNI kernel (its requantized arithmetic), not the AVX2 one.
bool requantized_kernel() {
#if defined(CLEF_GEMM_ISA_AVX2)
  return false;
#else
  return ggml_cpu_has_avx512_vnni() != 0;
#endif
}

/// The kernels' arithmetic: the exact sub-block form, or the AVX-512 VNNI kernel's requantized
/// one (`requantized`).
float reference(const std::vector<BlockQ4Kx8>& w, const std::vector<BlockQ8Kx4>& a, int nb, int r,
                int c, bool requantized) {
  const int m = r % 4;
  const int j = c % 8;
  float acc = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const BlockQ4Kx8& wb = w[static_cast<std::size_t>(c / 8) * nb + b];
    const BlockQ8Kx4& ab = a[static_cast<std::size_t>(r / 4) * nb + b];
    int largest = 0;  // S
    for (int sub = 0; sub < 8; ++sub)
      largest = std::max(largest, scale_or_min(wb.scales + 12 * sub, j, false));
    std::int32_t isum = 0;
    std::int32_t imin = 0;
    for (int sub = 0; sub < 8; ++sub) {
      const int sb = sub / 2;
      const int half = sub % 2;
      const std::uint8_t* group = wb.scales + 12 * sub;
      const int scale = scale_or_min(group, j, false);
      const int t = static_cast<int>(std::nearbyint(static_cast<float>(2176 * scale) /
                                                    static_cast<float>(std::max(largest, 1))));
      std::int32_t dot = 0;
      for (int g = 0; g < 4; ++g) {
        for (int i = 0; i < 8; ++i) {
          const std::uint8_t packed = wb.qs[sb * 256 + g * 64 + j * 8 + i];
          const int q4 = half == 0 ? packed & 0x0F : packed >> 4;
          const int weight = requantized ? (q4 * t + 64) >> 7 : q4;
          dot += weight * ab.qs[sb * 256 + half * 128 + g * 32 + m * 8 + i];
        }
      }
      isum += requantized ? dot : scale * dot;
      // row m's 16-value bsums of this sub-block, added in int16 as the kernels add them
      const std::int16_t* bs = ab.bsums + 16 * sb + 4 * m + 2 * half;
      imin += static_cast<std::int16_t>(bs[0] + bs[1]) * scale_or_min(group, j, true);
    }
    const float d = ggml_fp16_to_fp32(wb.d[j]);
    const float step = requantized ? (d * static_cast<float>(largest)) / 17.0f : d;
    acc = std::fma(static_cast<float>(isum), step * ab.d[m], acc);
    acc = std::fma(-static_cast<float>(imin), ggml_fp16_to_fp32(wb.dmin[j]) * ab.d[m], acc);
  }
  return acc;
}

struct Shape {
  int k;
  int rows;
  int cols;
};

class Q4KGemm : public testing::TestWithParam<Shape> {};

TEST_P(Q4KGemm, GivesItsArithmeticBitForBit) {
  std::string why;
  if (!clef_test::has_clef_q4_K_kernel(why)) GTEST_SKIP() << why;
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
  // In every third block, column 0 with one sub-block of scale 63 beside scales 0..7 (the
  // requantization's widest spread); in the next, column 0 with all scales 0 (S = 0). A column's
  // scale of sub-block `sub` is the low 6 bits of byte 12 sub + column (columns 0-3).
  for (std::size_t i = 0; i < w.size(); ++i) {
    for (int sub = 0; sub < 8 && i % 3 != 2; ++sub) {
      const int scale = i % 3 == 1 ? 0 : (sub == 5 ? 63 : sub);
      std::uint8_t& byte = w[i].scales[12 * sub];
      byte = static_cast<std::uint8_t>((byte & 0xC0) | scale);
    }
  }
  std::vector<float> out(static_cast<std::size_t>(nr) * nc, NAN);
  ggml_gemm_q4_K_8x8_q8_K(k, out.data(), static_cast<std::size_t>(nc), w.data(), a.data(), nr, nc);
  int differing = 0;
  for (int r = 0; r < nr; ++r) {
    for (int c = 0; c < nc; ++c) {
      const float want = reference(w, a, nb, r, c, requantized_kernel());
      const float got = out[static_cast<std::size_t>(r) * nc + c];
      if (std::memcmp(&want, &got, sizeof(float)) != 0 && ++differing <= 5) {
        ADD_FAILURE() << "row " << r << " column " << c << ": " << got << " (want " << want << ")";
      }
    }
  }
  EXPECT_EQ(differing, 0) << "of " << nr * nc;
}

// CLEF_GEMM_VARIANT: Native (the linked libggml-cpu), Avx2 or Avx2Vnni.
#define CLEF_CONCAT_(a, b) a##b
#define CLEF_CONCAT(a, b) CLEF_CONCAT_(a, b)
#define CLEF_INSTANTIATE(prefix, ...) INSTANTIATE_TEST_SUITE_P(prefix, __VA_ARGS__)
CLEF_INSTANTIATE(CLEF_CONCAT(CLEF_GEMM_VARIANT, RowTilesAndColumnCounts), Q4KGemm,
                 testing::Values(Shape{256, 4, 16}, Shape{512, 8, 32}, Shape{1024, 12, 16},
                                 Shape{256, 20, 48}, Shape{512, 64, 16}, Shape{256, 68, 32},
                                 Shape{256, 132, 16}, Shape{1024, 260, 32}, Shape{512, 8, 64},
                                 Shape{256, 12, 112}, Shape{768, 36, 208}, Shape{256, 16, 8},
                                 Shape{512, 68, 24}),
                 [](const testing::TestParamInfo<Shape>& info) {
                   std::ostringstream name;
                   name << 'k' << info.param.k << "_rows" << info.param.rows << "_cols"
                        << info.param.cols;
                   return name.str();
                 });

}  // namespace
