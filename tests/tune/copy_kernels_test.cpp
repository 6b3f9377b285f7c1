// The CPU copies clef's ggml patch speeds up (cmake/patches/ggml-cpu-transposed-copy-and-pad.diff):
// a transposed f32 matrix made contiguous (copied in tiles) and a zero-padded f32 tensor (copied by
// rows), each against an element-by-element reference, on sizes that are not multiples of the
// tile, over 1 and 3 threads (each thread's share of the rows). The patch's reason is speed
// (bench/tune_step_bench.cpp); this checks that the faster copies copy the same values.

#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "support/ggml_cpu_graph.hpp"

namespace {

using clef::test::at;
using clef::test::compute;

/// A [ne0, ne1, ne2] f32 tensor of random values.
ggml_tensor* random_tensor(ggml_context* ctx, std::int64_t ne0, std::int64_t ne1,
                           std::int64_t ne2) {
  ggml_tensor* t = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, ne0, ne1, ne2);
  std::mt19937 rng(static_cast<unsigned>(ne0 * 131 + ne1 * 7 + ne2));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto* v = static_cast<float*>(t->data);
  for (std::int64_t i = 0; i < ggml_nelements(t); ++i) v[i] = u(rng);
  return t;
}

TEST(CopyKernels, ATransposedMatrixIsCopiedExactly) {
  for (int threads : {1, 3}) {
    for (auto [ne0, ne1] :
         {std::pair<std::int64_t, std::int64_t>{37, 53}, {16, 16}, {1, 70}, {70, 1}, {1000, 33}}) {
      SCOPED_TRACE(std::to_string(ne0) + " x " + std::to_string(ne1) + ", " +
                   std::to_string(threads) + " threads");
      const ggml_context_ptr c = clef::test::cpu_context();
      ggml_tensor* a = random_tensor(c.get(), ne0, ne1, 1);
      ggml_tensor* view = ggml_transpose(c.get(), a);  // [ne1, ne0], rows contiguous along i01
      ggml_tensor* out = ggml_cont(c.get(), view);
      compute(c.get(), out, threads);
      for (std::int64_t i1 = 0; i1 < ne0; ++i1) {
        for (std::int64_t i0 = 0; i0 < ne1; ++i0)
          ASSERT_EQ(at(out, i0, i1, 0), at(view, i0, i1, 0)) << i0 << ", " << i1;
      }
    }
  }
}

TEST(CopyKernels, ThePermutationOfTheHeadsValuesIsCopiedExactly) {
  // The attention's V as [S, d, h] from [d, h, S] (head_graph_ops.cpp, attend): a 3-D permute
  // whose rows are contiguous along its second dimension.
  for (int threads : {1, 3}) {
    const ggml_context_ptr c = clef::test::cpu_context();
    ggml_tensor* v = random_tensor(c.get(), 8 * 5, 29, 1);  // [E = d h, S]
    ggml_tensor* p =
        ggml_permute(c.get(), ggml_reshape_3d(c.get(), v, 8, 5, 29), 1, 2, 0, 3);  // [S, d, h]
    ggml_tensor* out = ggml_cont(c.get(), p);
    compute(c.get(), out, threads);
    for (std::int64_t i2 = 0; i2 < 5; ++i2) {
      for (std::int64_t i1 = 0; i1 < 8; ++i1) {
        for (std::int64_t i0 = 0; i0 < 29; ++i0)
          ASSERT_EQ(at(out, i0, i1, i2), at(p, i0, i1, i2)) << i0 << ", " << i1 << ", " << i2;
      }
    }
  }
}

TEST(CopyKernels, APaddedTensorHoldsItsValuesAndZeros) {
  for (int threads : {1, 3}) {
    const ggml_context_ptr c = clef::test::cpu_context();
    ggml_tensor* a = random_tensor(c.get(), 37, 11, 3);
    ggml_tensor* out = ggml_pad_ext(c.get(), a, 2, 27, 1, 3, 0, 2, 0, 0);
    compute(c.get(), out, threads);
    ASSERT_EQ(out->ne[0], 66);
    ASSERT_EQ(out->ne[1], 15);
    ASSERT_EQ(out->ne[2], 5);
    for (std::int64_t i2 = 0; i2 < out->ne[2]; ++i2) {
      for (std::int64_t i1 = 0; i1 < out->ne[1]; ++i1) {
        for (std::int64_t i0 = 0; i0 < out->ne[0]; ++i0) {
          const bool inside = i0 >= 2 && i0 < 2 + 37 && i1 >= 1 && i1 < 1 + 11 && i2 < 3;
          const float want = inside ? at(a, i0 - 2, i1 - 1, i2) : 0.0f;
          ASSERT_EQ(at(out, i0, i1, i2), want) << i0 << ", " << i1 << ", " << i2;
        }
      }
    }
  }
}

}  // namespace
