// The two CPU kernels of the backbone's delta-net layers that clef's ggml patch rewrites for
// speed (cmake/patches/ggml-cpu-ssm-conv-and-concat.diff): ggml_ssm_conv's 4-tap convolution,
// now computed along time, and ggml_concat along rows, now split over the threads by row blocks.
// Each against an element-by-element reference of what the pinned loops compute (the
// convolution's sums as compilers build `sumf += s * c`: fused multiply-adds where ggml's CPU
// build has FMA), bit for bit, on sizes that are not multiples of the tiles, over 1 and 3
// threads, one and two sequences. The reason is speed (docs/performance.md, issue 51); this
// checks that the values stay the same.

#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "support/ggml_cpu_graph.hpp"

namespace {

using clef::test::at;
using clef::test::compute;

ggml_tensor* random_tensor(ggml_context* ctx, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2,
                           unsigned seed) {
  ggml_tensor* t = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, ne0, ne1, ne2);
  clef::test::fill_normal(t, seed);
  return t;
}

/// One output of the pinned loop: sumf = 0; sumf += s[i] * w[i] for the 4 taps, contracted into
/// fused multiply-adds where ggml's CPU build has FMA (as GCC and Clang compile it).
float reference_4tap(const float* s, const float* w) {
  if (ggml_cpu_has_fma() != 0) {
    return std::fma(s[3], w[3], std::fma(s[2], w[2], std::fma(s[1], w[1], s[0] * w[0])));
  }
  return ((s[0] * w[0] + s[1] * w[1]) + s[2] * w[2]) + s[3] * w[3];
}

TEST(ConvConcatKernels, TheFourTapConvolutionGivesThePinnedLoopsValues) {
  for (int threads : {1, 3}) {
    for (auto [channels, tokens, seqs] :
         {std::tuple<std::int64_t, std::int64_t, std::int64_t>{37, 70, 1},
          {16, 64, 1},
          {100, 1, 2},
          {5, 130, 2},
          {1, 3, 1}}) {
      SCOPED_TRACE(std::to_string(channels) + " channels, " + std::to_string(tokens) + " tokens, " +
                   std::to_string(seqs) + " sequences, " + std::to_string(threads) + " threads");
      const ggml_context_ptr c = clef::test::cpu_context();
      // conv_x: {d_conv - 1 + n_t, d_inner, n_s}; weight {d_conv, d_inner}
      ggml_tensor* x = random_tensor(c.get(), 3 + tokens, channels, seqs, 5);
      ggml_tensor* w = random_tensor(c.get(), 4, channels, 1, 6);
      ggml_tensor* w2 = ggml_reshape_2d(c.get(), w, 4, channels);
      ggml_tensor* out = ggml_ssm_conv(c.get(), x, w2);  // {d_inner, n_t, n_s}
      compute(c.get(), out, threads);
      const auto* xv = static_cast<const float*>(x->data);
      const auto* wv = static_cast<const float*>(w->data);
      for (std::int64_t s = 0; s < seqs; ++s) {
        for (std::int64_t t = 0; t < tokens; ++t) {
          for (std::int64_t ch = 0; ch < channels; ++ch) {
            const float want =
                reference_4tap(xv + (s * channels + ch) * (3 + tokens) + t, wv + ch * 4);
            const float got = at(out, ch, t, s);
            ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
                << "channel " << ch << ", token " << t << ", sequence " << s << ": " << got
                << " vs " << want;
          }
        }
      }
    }
  }
}

TEST(ConvConcatKernels, AConcatenationAlongRowsCopiesBothSourcesExactly) {
  // The delta-net's conv input: the conv state [3, channels] then the tokens' values, a
  // transposed view [tokens, channels]; and plain contiguous sources, with more than one plane.
  for (int threads : {1, 3}) {
    for (auto [rows, first, second, planes, transposed] :
         {std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>{37, 3, 70, 1,
                                                                                   true},
          {16, 3, 1, 1, true},
          {5, 7, 9, 3, false},
          {40, 1, 33, 2, false}}) {
      SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(first) + " + " +
                   std::to_string(second) + ", " + std::to_string(planes) + " planes" +
                   (transposed ? ", transposed second" : "") + ", " + std::to_string(threads) +
                   " threads");
      const ggml_context_ptr c = clef::test::cpu_context();
      ggml_tensor* a = random_tensor(c.get(), first, rows, planes, 7);
      ggml_tensor* b = transposed
                           ? ggml_transpose(c.get(), random_tensor(c.get(), rows, second, 1, 8))
                           : random_tensor(c.get(), second, rows, planes, 8);
      ggml_tensor* out = ggml_concat(c.get(), a, b, 0);
      compute(c.get(), out, threads);
      for (std::int64_t p = 0; p < planes; ++p) {
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t i = 0; i < first + second; ++i) {
            const float want = i < first ? at(a, i, r, p) : at(b, i - first, r, p);
            ASSERT_EQ(at(out, i, r, p), want) << "element " << i << " of row " << r;
          }
        }
      }
    }
  }
}

}  // namespace
