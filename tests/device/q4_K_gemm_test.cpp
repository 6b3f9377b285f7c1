// ggml's repacked Q4_K x Q8_K GEMM (ggml_gemm_q4_K_8x8_q8_K, the CPU's hot loop on Q4_K
// backbones) against its arithmetic spelled out here. clef patches the pinned tree with AVX-512
// VNNI and AVX2 kernels (cmake/patches/ggml-cpu-q4_K-gemm-x86.diff,
// ggml-cpu-x86-q4_K-requantized-strip.diff, ggml-cpu-x86-vnni-q4_K-offset-requantization.diff). The
// AVX2 kernel (with and without AVX-VNNI) gives, per row r, column c and superblock, the exact
// int32
//   I  = sum over the 8 sub-blocks of scale * dot  (dot: 32 products of a 4-bit weight and an
//        int8 activation)
//   Mn = sum over the 8 sub-blocks of min * bsum   (a sub-block's two bsums added in int16)
// accumulated as acc = fma(float(I), d_c * d_r, acc), then acc = fma(-float(Mn), dmin_c * d_r,
// acc), superblock after superblock. The AVX-512 VNNI kernel requantizes each column's superblock
// to 8 bits offset by 128 first, the mins folded in (no sub-block scale or min left in its tile):
// with a_j = d_c * scale_j, b_j = dmin_c * min_j, M = max_j max(|b_j|, |fma(a_j, 15, -b_j)|), D = M
// (1 where M = 0), T_j = nearest-even((16256 a_j) / D), U_j = 16448 - nearest-even((16256 b_j) / D)
// and w8 = (q T_j + U_j) >> 7, it sums
//   I  = sum over the 256 values of w8 * activation - 128 * (the row's 16 bsums added)
// and accumulates fma(float(I), (M / 127) * d_r, acc). Shapes cover
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

/// Weight q4 (0..15) of column j in sub-block `sub`, value 8 g + i, and the activation of row m
/// at the same place (the interleaved layouts above).
int weight_at(const BlockQ4Kx8& wb, int j, int sub, int g, int i) {
  const std::uint8_t packed = wb.qs[sub / 2 * 256 + g * 64 + j * 8 + i];
  return sub % 2 == 0 ? packed & 0x0F : packed >> 4;
}
int activation_at(const BlockQ8Kx4& ab, int m, int sub, int g, int i) {
  return ab.qs[sub / 2 * 256 + sub % 2 * 128 + g * 32 + m * 8 + i];
}

/// acc after one superblock of column j and row m in the AVX2 kernels' exact sub-block form.
float exact_superblock(const BlockQ4Kx8& wb, const BlockQ8Kx4& ab, int j, int m, float acc) {
  std::int32_t isum = 0;
  std::int32_t imin = 0;
  for (int sub = 0; sub < 8; ++sub) {
    const std::uint8_t* group = wb.scales + 12 * sub;
    std::int32_t dot = 0;
    for (int g = 0; g < 4; ++g)
      for (int i = 0; i < 8; ++i)
        dot += weight_at(wb, j, sub, g, i) * activation_at(ab, m, sub, g, i);
    isum += scale_or_min(group, j, false) * dot;
    // row m's 16-value bsums of this sub-block, added in int16 as the kernels add them
    const std::int16_t* bs = ab.bsums + 16 * (sub / 2) + 4 * m + 2 * (sub % 2);
    imin += static_cast<std::int16_t>(bs[0] + bs[1]) * scale_or_min(group, j, true);
  }
  acc = std::fma(static_cast<float>(isum), ggml_fp16_to_fp32(wb.d[j]) * ab.d[m], acc);
  return std::fma(-static_cast<float>(imin), ggml_fp16_to_fp32(wb.dmin[j]) * ab.d[m], acc);
}

/// acc after one superblock of column j and row m in the AVX-512 VNNI kernel's form: the
/// column's weights requantized to u8 offset by 128, the mins folded in.
float requantized_superblock(const BlockQ4Kx8& wb, const BlockQ8Kx4& ab, int j, int m, float acc) {
  const float d = ggml_fp16_to_fp32(wb.d[j]);
  const float dmin = ggml_fp16_to_fp32(wb.dmin[j]);
  float step[8];         // a_j
  float offset[8];       // b_j
  float largest = 0.0f;  // M
  for (int sub = 0; sub < 8; ++sub) {
    step[sub] = d * static_cast<float>(scale_or_min(wb.scales + 12 * sub, j, false));
    offset[sub] = dmin * static_cast<float>(scale_or_min(wb.scales + 12 * sub, j, true));
    largest = std::max(largest, std::max(std::fabs(offset[sub]),
                                         std::fabs(std::fma(step[sub], 15.0f, -offset[sub]))));
  }
  const float divisor = largest == 0.0f ? 1.0f : largest;
  std::int32_t isum = 0;
  for (int sub = 0; sub < 8; ++sub) {
    const int t = static_cast<int>(std::nearbyint((16256.0f * step[sub]) / divisor));
    const int u = 16448 - static_cast<int>(std::nearbyint((16256.0f * offset[sub]) / divisor));
    for (int g = 0; g < 4; ++g)
      for (int i = 0; i < 8; ++i)
        isum += ((weight_at(wb, j, sub, g, i) * t + u) >> 7) * activation_at(ab, m, sub, g, i);
  }
  std::int32_t sum_a = 0;  // row m's 16 bsums
  for (int p = 0; p < 4; ++p)
    for (int g = 0; g < 4; ++g) sum_a += ab.bsums[16 * p + 4 * m + g];
  return std::fma(static_cast<float>(isum - 128 * sum_a), (largest / 127.0f) * ab.d[m], acc);
}

/// The kernels' arithmetic for row r and column c, superblock after superblock: the exact
/// sub-block form, or the AVX-512 VNNI kernel's requantized one (`requantized`).
float reference(const std::vector<BlockQ4Kx8>& w, const std::vector<BlockQ8Kx4>& a, int nb, int r,
                int c, bool requantized) {
  float acc = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const BlockQ4Kx8& wb = w[static_cast<std::size_t>(c / 8) * nb + b];
    const BlockQ8Kx4& ab = a[static_cast<std::size_t>(r / 4) * nb + b];
    acc = requantized ? requantized_superblock(wb, ab, c % 8, r % 4, acc)
                      : exact_superblock(wb, ab, c % 8, r % 4, acc);
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
  // Block i % 4 == 0: column 0 with one sub-block of scale 63 beside scales 0..7 (the widest
  // spread), column 1 with all mins 0 (weights >= 0 only); 1: column 0 with all scales 0
  // (weights <= 0 only); 2: column 0 with all scales and mins 0 (M = 0); 3: as drawn. A column's
  // scale of sub-block `sub` is the low 6 bits of byte 12 sub + column, its min those of byte
  // 12 sub + 4 + column (columns 0-3).
  const auto set6 = [](std::uint8_t& byte, int value) {
    byte = static_cast<std::uint8_t>((byte & 0xC0) | value);
  };
  for (std::size_t i = 0; i < w.size(); ++i) {
    for (int sub = 0; sub < 8; ++sub) {
      std::uint8_t* group = w[i].scales + 12 * sub;
      if (i % 4 == 0) {
        set6(group[0], sub == 5 ? 63 : sub);
        set6(group[4 + 1], 0);
      } else if (i % 4 == 1) {
        set6(group[0], 0);
      } else if (i % 4 == 2) {
        set6(group[0], 0);
        set6(group[4], 0);
      }
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
