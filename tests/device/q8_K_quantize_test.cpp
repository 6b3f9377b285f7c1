// ggml's quantization of 4 activation rows into the interleaved Q8_K blocks the repacked K-quant
// GEMMs read (ggml_quantize_mat_q8_K_4x8, before every Q4_K and Q6_K product on x86), against its
// values spelled out here, which are the pinned tree's AVX2 loop's:
//   amax = max |x| over a row's 256 values; iscale = -127 / amax when some value equals +amax,
//   else 127 / amax (0 when amax is 0); d = 1 / iscale (0 when amax is 0); each quant is x * iscale
//   rounded to nearest, ties to even; bsums[16 * (e / 64) + 4 * row + (e / 16) % 4] = the sum of
//   the 16 quants from e; quants interleaved by 8 values of each row.
// clef's patch (cmake/patches/ggml-cpu-q8_K-quantize-avx512.diff) adds an AVX-512 loop for speed;
// the native binary checks it (on an AVX-512 CPU), clef_q8_K_quantize_avx2_tests checks the pinned
// AVX2 loop (the pinned tree's arch/x86/repack.cpp compiled into it), so both give these values.
// Inputs: random rows of several scales, and rows whose largest magnitude is negative only,
// positive only, both (either first), zero, and quants that fall exactly between two integers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kQK = 256;  // QK_K

struct BlockQ8Kx4 {
  float d[4];
  std::int8_t qs[kQK * 4];
  std::int16_t bsums[kQK / 4];
};
static_assert(sizeof(BlockQ8Kx4) == 16 + 1024 + 128);

extern "C" void ggml_quantize_mat_q8_K_4x8(const float* x, void* vy, std::int64_t k);

/// The values above for 4 rows of `k` values (row r at x + r * k).
std::vector<BlockQ8Kx4> reference(const std::vector<float>& x, int k) {
  std::vector<BlockQ8Kx4> y(static_cast<std::size_t>(k / kQK));
  for (int b = 0; b < k / kQK; ++b) {
    BlockQ8Kx4& out = y[static_cast<std::size_t>(b)];
    std::memset(out.bsums, 0, sizeof out.bsums);
    for (int r = 0; r < 4; ++r) {
      const float* row = x.data() + static_cast<std::size_t>(r) * k + b * kQK;
      float amax = 0.0f;
      for (int e = 0; e < kQK; ++e) amax = std::fmax(amax, std::fabs(row[e]));
      bool positive = false;
      for (int e = 0; e < kQK; ++e) positive = positive || row[e] == amax;
      const float iscale = amax != 0.0f ? (positive ? -127.f / amax : 127.f / amax) : 0.0f;
      out.d[r] = amax != 0.0f ? 1 / iscale : 0.0f;
      for (int e = 0; e < kQK; ++e) {
        const auto q = static_cast<std::int8_t>(std::nearbyint(row[e] * iscale));
        out.qs[32 * (e / 8) + 8 * r + e % 8] = q;
        out.bsums[16 * (e / 64) + 4 * r + (e / 16) % 4] += q;
      }
    }
  }
  return y;
}

void expect_equal(const std::vector<BlockQ8Kx4>& got, const std::vector<BlockQ8Kx4>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(std::memcmp(&got[b].d[r], &want[b].d[r], sizeof(float)), 0)
          << "block " << b << " row " << r << ": d " << got[b].d[r] << " (want " << want[b].d[r]
          << ")";
    }
    for (int j = 0; j < kQK * 4; ++j) {
      ASSERT_EQ(got[b].qs[j], want[b].qs[j]) << "block " << b << " quant " << j;
    }
    for (int j = 0; j < kQK / 4; ++j) {
      ASSERT_EQ(got[b].bsums[j], want[b].bsums[j]) << "block " << b << " bsum " << j;
    }
  }
}

void check(const std::vector<float>& x, int k) {
  std::vector<BlockQ8Kx4> got(static_cast<std::size_t>(k / kQK));
  ggml_quantize_mat_q8_K_4x8(x.data(), got.data(), k);
  expect_equal(got, reference(x, k));
}

// CLEF_QUANTIZE_VARIANT: Native (the linked libggml-cpu) or Avx2 (the pinned AVX2 loop).
#ifndef CLEF_QUANTIZE_VARIANT
#define CLEF_QUANTIZE_VARIANT Native
#endif
#define CLEF_CONCAT_(a, b) a##b
#define CLEF_CONCAT(a, b) CLEF_CONCAT_(a, b)
#define CLEF_SUITE CLEF_CONCAT(CLEF_QUANTIZE_VARIANT, Q8KQuantize)

TEST(CLEF_SUITE, RandomRowsOfSeveralScales) {
  std::mt19937 rng(7);
  for (int k : {256, 512, 1024, 3584}) {
    for (float scale : {1e-3f, 1.0f, 40.0f}) {
      SCOPED_TRACE("k " + std::to_string(k) + ", scale " + std::to_string(scale));
      std::normal_distribution<float> n(0.0f, scale);
      std::vector<float> x(static_cast<std::size_t>(4) * k);
      for (float& v : x) v = n(rng);
      check(x, k);
    }
  }
}

TEST(CLEF_SUITE, TheLargestMagnitudesSignAndTies) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(4) * 512);
  for (float& v : x) v = u(rng);
  // superblock 0: row 0 negative only, row 1 positive only, row 2 both (negative first), row 3
  // both (positive first); superblock 1: row 0 all zero, row 1 one value only, rows 2 and 3 at
  // amax 127 (iscale -1 or 1) with values halfway between integers.
  x[0 * 512 + 17] = -3.0f;
  x[1 * 512 + 200] = 3.0f;
  x[2 * 512 + 5] = -3.0f;
  x[2 * 512 + 250] = 3.0f;
  x[3 * 512 + 9] = 3.0f;
  x[3 * 512 + 100] = -3.0f;
  for (int e = 0; e < kQK; ++e) x[0 * 512 + 256 + e] = 0.0f;
  for (int e = 0; e < kQK; ++e) x[1 * 512 + 256 + e] = e == 77 ? -0.5f : 0.0f;
  for (int row : {2, 3}) {
    for (int e = 0; e < kQK; ++e) {
      x[static_cast<std::size_t>(row) * 512 + 256 + e] = static_cast<float>(e % 120) - 59.5f;
    }
    x[static_cast<std::size_t>(row) * 512 + 256 + 3] = row == 2 ? 127.0f : -127.0f;
  }
  check(x, 512);
}

}  // namespace
