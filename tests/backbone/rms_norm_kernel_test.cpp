// ggml's RMS norm on the CPU as clef's ggml patch runs it
// (cmake/patches/ggml-cpu-rms-norm-rows.diff): rows in blocks of 8, their sums of squares 8 at
// once, one row a vector lane. Each row's value must stay the pinned loop's: sum = 0.0, then sum +=
// (double)(x[i] * x[i]) in index order, scale = 1 / sqrtf(float(sum / n) + eps), y = x * scale
// (alone) or (x * scale) * w (fused with the MUL that follows it, as llama.cpp's norms are).
// Checked bit for bit on row lengths that are and are not multiples of the 8-wide step, row counts
// that are not multiples of the block, strided views (the delta net's q and k rows), broadcast
// weights, 1 and 3 threads. The reason is speed (docs/performance.md, issue 51); this checks that
// the values stay the same.

#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "support/ggml_cpu_graph.hpp"

namespace {

using clef::test::at;
using clef::test::compute;
using clef::test::fill_normal;

/// The pinned loop's scale of one row of `n` values read through `at` (i0 = 0..n-1).
template <typename Read>
float reference_scale(Read read, std::int64_t n, float eps) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = read(i);
    sum += static_cast<double>(x * x);
  }
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  return 1.0f / std::sqrt(mean + eps);
}

void expect_same_bits(float got, float want, const std::string& where) {
  ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0) << where << ": " << got << " vs " << want;
}

/// Every row of `y` against the pinned loop over the same row of `x` (rows along ne1, planes
/// along ne2): x * scale, then times w[i] when `w` is given (the fused MUL).
void expect_pinned_rows(const ggml_tensor* x, const ggml_tensor* y, float eps,
                        const ggml_tensor* w = nullptr) {
  for (std::int64_t p = 0; p < x->ne[2]; ++p) {
    for (std::int64_t r = 0; r < x->ne[1]; ++r) {
      const float scale =
          reference_scale([&](std::int64_t i) { return at(x, i, r, p); }, x->ne[0], eps);
      for (std::int64_t i = 0; i < x->ne[0]; ++i) {
        float want = at(x, i, r, p) * scale;
        if (w != nullptr) want *= at(w, i, 0, 0);
        expect_same_bits(at(y, i, r, p), want,
                         "row " + std::to_string(r) + ", plane " + std::to_string(p) +
                             ", element " + std::to_string(i));
      }
    }
  }
}

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // row length, rows, planes

const Shape kShapes[] = {{128, 16, 5}, {1024, 19, 1}, {100, 8, 2}, {7, 3, 2},
                         {9, 1, 1},    {8, 17, 1},    {256, 9, 3}};

/// rms_norm (eps) of a random [n, rows, planes] tensor (normal values of `stddev` from `seed`),
/// alone or fused with a broadcast weight (normal values from seed + 1), over every shape of
/// kShapes with 1 and 3 threads, against the pinned loop.
void check_every_shape(bool fused, unsigned seed, float stddev, float eps) {
  for (int threads : {1, 3}) {
    for (auto [n, rows, planes] : kShapes) {
      SCOPED_TRACE(std::to_string(n) + " x " + std::to_string(rows) + " x " +
                   std::to_string(planes) + ", " + std::to_string(threads) + " threads");
      const ggml_context_ptr c = clef::test::cpu_context();
      ggml_tensor* x = ggml_new_tensor_3d(c.get(), GGML_TYPE_F32, n, rows, planes);
      fill_normal(x, seed, stddev);
      ggml_tensor* y = ggml_rms_norm(c.get(), x, eps);
      ggml_tensor* w = nullptr;
      if (fused) {
        w = ggml_new_tensor_1d(c.get(), GGML_TYPE_F32, n);  // broadcast over rows
        fill_normal(w, seed + 1);
        y = ggml_mul(c.get(), y, w);
      }
      compute(c.get(), y, threads);
      expect_pinned_rows(x, y, eps, w);
    }
  }
}

TEST(RmsNormKernel, AloneGivesThePinnedLoopsValues) {
  check_every_shape(false, 11, 3.0f, 1e-6f);
}

TEST(RmsNormKernel, FusedWithItsWeightGivesThePinnedLoopsValues) {
  check_every_shape(true, 12, 0.5f, 1e-5f);
}

// The delta net's q and k: 128-wide rows of heads (rows: heads, planes: tokens), views into each
// token's wider row (the convolution's output), normalized with eps / n (build_gdn_l2_norm).
TEST(RmsNormKernel, StridedHeadRowsGiveThePinnedLoopsValues) {
  for (int threads : {1, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const std::int64_t head = 128, heads = 12, tokens = 5, wide = 3 * head * heads + 16;
    const ggml_context_ptr c = clef::test::cpu_context();
    ggml_tensor* all = ggml_new_tensor_2d(c.get(), GGML_TYPE_F32, wide, tokens);
    fill_normal(all, 14, 2.0f);
    ggml_tensor* k = ggml_view_3d(c.get(), all, head, heads, tokens, head * sizeof(float),
                                  all->nb[1], head * heads * sizeof(float));
    const float eps = 1e-6f / static_cast<float>(head);
    ggml_tensor* y = ggml_rms_norm(c.get(), k, eps);
    compute(c.get(), y, threads);
    expect_pinned_rows(k, y, eps);
  }
}

}  // namespace
