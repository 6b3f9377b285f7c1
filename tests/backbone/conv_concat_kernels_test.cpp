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
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
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

/// Channels, tokens and sequences of a convolution test.
struct ConvShape {
  std::int64_t channels, tokens, seqs;
};

/// Runs check(shape, threads) for every shape on 1 and 3 threads, each traced by its sizes.
template <typename Check>
void for_each_conv_shape(std::initializer_list<ConvShape> shapes, Check check) {
  for (int threads : {1, 3}) {
    for (const ConvShape& shape : shapes) {
      SCOPED_TRACE(std::to_string(shape.channels) + " channels, " + std::to_string(shape.tokens) +
                   " tokens, " + std::to_string(shape.seqs) + " sequences, " +
                   std::to_string(threads) + " threads");
      check(shape, threads);
    }
  }
}

TEST(ConvConcatKernels, TheFourTapConvolutionGivesThePinnedLoopsValues) {
  for_each_conv_shape({{37, 70, 1}, {16, 64, 1}, {100, 1, 2}, {5, 130, 2}, {1, 3, 1}},
                      [](const ConvShape& shape, int threads) {
                        const auto [channels, tokens, seqs] = shape;
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
                              const float want = reference_4tap(
                                  xv + (s * channels + ch) * (3 + tokens) + t, wv + ch * 4);
                              const float got = at(out, ch, t, s);
                              ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
                                  << "channel " << ch << ", token " << t << ", sequence " << s
                                  << ": " << got << " vs " << want;
                            }
                          }
                        }
                      });
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

/// The delta net's convolution input as the qwen35 graph builds it (llama.cpp's
/// build_conv_state): the conv state {3, channels, seqs}, then the tokens' values {channels,
/// tokens, seqs} transposed, concatenated along rows; the rows' last 3 columns copied out as the
/// next conv state; the 4-tap convolution of the concatenation. `between` (may be null) is built
/// after the copy and before the convolution, as a node the graph runs between them; scratch and
/// copy are tensors of the result's size for it.
struct ConvInput {
  ggml_tensor* state;
  ggml_tensor* values;
  ggml_tensor* weight;
  ggml_tensor* next_state;
  ggml_tensor* out;
  ggml_tensor* scratch;  // as large as out, for a node between to use
  ggml_tensor* copy;     // as large as out, for a node between to copy into
};

ConvInput conv_input_graph(ggml_context* c, ggml_cgraph* gf, std::int64_t channels,
                           std::int64_t tokens, std::int64_t seqs,
                           ggml_tensor* (*between)(ggml_context*, ConvInput&)) {
  ConvInput g{};
  g.state = random_tensor(c, 3, channels, seqs, 11);
  g.values = random_tensor(c, channels, tokens, seqs, 12);
  g.weight = random_tensor(c, 4, channels, 1, 13);
  ggml_tensor* cat = ggml_concat(c, g.state, ggml_transpose(c, g.values), 0);
  ggml_tensor* last = ggml_view_3d(c, cat, 3, channels, seqs, cat->nb[1], cat->nb[2],
                                   ggml_row_size(cat->type, cat->ne[0] - 3));
  g.next_state = ggml_new_tensor_2d(c, GGML_TYPE_F32, 3 * channels, seqs);
  g.scratch = random_tensor(c, channels, tokens, seqs, 14);
  g.copy = ggml_new_tensor_3d(c, GGML_TYPE_F32, channels, tokens, seqs);
  ggml_build_forward_expand(gf, ggml_cpy(c, last, g.next_state));
  if (between != nullptr) ggml_build_forward_expand(gf, between(c, g));
  g.out = ggml_ssm_conv(c, cat, ggml_reshape_2d(c, g.weight, 4, channels));
  ggml_build_forward_expand(gf, g.out);
  return g;
}

/// Input column i (0..tokens+2) of channel ch of sequence s: the state's 3 columns, then the
/// tokens' values; `values` as they were when the graph was built (`values_then`).
float conv_input_at(const ConvInput& g, const std::vector<float>& values_then, std::int64_t i,
                    std::int64_t ch, std::int64_t s) {
  const std::int64_t channels = g.values->ne[0];
  const std::int64_t tokens = g.values->ne[1];
  return i < 3 ? at(g.state, i, ch, s) : values_then[(s * tokens + (i - 3)) * channels + ch];
}

/// Checks the convolution and the next conv state of `g` against the concatenation's values.
void expect_conv_input_values(const ConvInput& g, const std::vector<float>& values_then) {
  const std::int64_t channels = g.values->ne[0];
  const std::int64_t tokens = g.values->ne[1];
  const std::int64_t seqs = g.values->ne[2];
  const auto* wv = static_cast<const float*>(g.weight->data);
  for (std::int64_t s = 0; s < seqs; ++s) {
    for (std::int64_t ch = 0; ch < channels; ++ch) {
      for (std::int64_t i = 0; i < 3; ++i) {
        ASSERT_EQ(at(g.next_state, ch * 3 + i, s, 0),
                  conv_input_at(g, values_then, tokens + i, ch, s))
            << "next conv state, channel " << ch << ", column " << i << ", sequence " << s;
      }
      for (std::int64_t t = 0; t < tokens; ++t) {
        const float in[4] = {conv_input_at(g, values_then, t, ch, s),
                             conv_input_at(g, values_then, t + 1, ch, s),
                             conv_input_at(g, values_then, t + 2, ch, s),
                             conv_input_at(g, values_then, t + 3, ch, s)};
        const float want = reference_4tap(in, wv + ch * 4);
        const float got = at(g.out, ch, t, s);
        ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
            << "channel " << ch << ", token " << t << ", sequence " << s << ": " << got << " vs "
            << want;
      }
    }
  }
}

std::vector<float> values_of(const ggml_tensor* t) {
  const auto* v = static_cast<const float*>(t->data);
  return {v, v + ggml_nelements(t)};
}

TEST(ConvConcatKernels, TheConvolutionInputGraphGivesTheConcatenationsValues) {
  // The CPU convolves the two sources and writes only the concatenation's last 3 columns where
  // the graph reads nothing else of it (ggml-cpu-ssm-conv-from-concat.diff): channels that are
  // not a multiple of a vector and more than one block of 512, fewer tokens than the state's 3
  // columns (decoding), two sequences.
  for_each_conv_shape(
      {{37, 70, 1}, {600, 9, 2}, {48, 1, 2}, {20, 2, 1}, {16, 3, 3}},
      [](const ConvShape& shape, int threads) {
        const ggml_context_ptr c = clef::test::cpu_context();
        ggml_cgraph* gf = ggml_new_graph(c.get());
        const ConvInput g =
            conv_input_graph(c.get(), gf, shape.channels, shape.tokens, shape.seqs, nullptr);
        const std::vector<float> values_then = values_of(g.values);
        ASSERT_EQ(ggml_graph_compute_with_ctx(c.get(), gf, threads), GGML_STATUS_SUCCESS);
        expect_conv_input_values(g, values_then);
      });
}

TEST(ConvConcatKernels, TheConvolutionInputKeepsTheGraphsOrder) {
  // The CPU convolves at the concatenation (ggml-cpu-ssm-conv-from-concat.diff). Every reader
  // must still see what ggml's order of nodes gives: nodes run between the two that write over
  // the sources (as the graph allocator may place them once the concatenation has read them);
  // where the convolution's result memory is written or read by a node run between (it may have
  // been a shorter-lived tensor's), where the weights are written between, or where the result
  // goes over a source: there the CPU concatenates and convolves in the graph's order.
  struct Case {
    const char* what;
    ggml_tensor* (*between)(ggml_context*, ConvInput&);
    bool out_over_scratch;  // the convolution's result in the scratch tensor's memory
    bool out_over_values;   // the convolution's result in the tokens' values' memory
    bool copies_scratch;    // the node between copies the scratch tensor out
  };
  const Case cases[] = {
      {"a node over the tokens' values",
       [](ggml_context* c, ConvInput& g) { return ggml_scale_inplace(c, g.values, 2.0f); }, false,
       false, false},
      {"a node over the conv state",
       [](ggml_context* c, ConvInput& g) { return ggml_scale_inplace(c, g.state, -1.0f); }, false,
       false, false},
      {"a node writing where the result goes",
       [](ggml_context* c, ConvInput& g) { return ggml_scale_inplace(c, g.scratch, 3.0f); }, true,
       false, false},
      {"a node reading where the result goes",
       [](ggml_context* c, ConvInput& g) { return ggml_cpy(c, g.scratch, g.copy); }, true, false,
       true},
      {"a node writing the weights",
       [](ggml_context* c, ConvInput& g) { return ggml_scale_inplace(c, g.weight, 2.0f); }, false,
       false, false},
      {"the result over the tokens' values", nullptr, false, true, false},
  };
  for (int threads : {1, 3}) {
    for (const Case& k : cases) {
      SCOPED_TRACE(std::string(k.what) + ", " + std::to_string(threads) + " threads");
      const ggml_context_ptr c = clef::test::cpu_context();
      ggml_cgraph* gf = ggml_new_graph(c.get());
      ConvInput g = conv_input_graph(c.get(), gf, 40, 21, 2, k.between);
      const std::vector<float> values_then = values_of(g.values);
      const std::vector<float> state_then = values_of(g.state);
      const std::vector<float> scratch_then = values_of(g.scratch);
      if (k.out_over_scratch) g.out->data = g.scratch->data;
      if (k.out_over_values) g.out->data = g.values->data;
      ASSERT_EQ(ggml_graph_compute_with_ctx(c.get(), gf, threads), GGML_STATUS_SUCCESS);
      std::memcpy(g.state->data, state_then.data(), state_then.size() * sizeof(float));
      expect_conv_input_values(g, values_then);  // the weights as the convolution read them
      if (k.copies_scratch) {
        EXPECT_EQ(values_of(g.copy), scratch_then) << "what the node between read";
      }
    }
  }
  for (int threads : {1, 3}) {
    SCOPED_TRACE("the whole concatenation copied out, " + std::to_string(threads) + " threads");
    const ggml_context_ptr c = clef::test::cpu_context();
    ggml_cgraph* gf = ggml_new_graph(c.get());
    const ConvInput g = conv_input_graph(c.get(), gf, 33, 17, 2, nullptr);
    ggml_tensor* cat = g.out->src[0];
    ggml_tensor* whole =
        ggml_cpy(c.get(), cat, ggml_new_tensor(c.get(), GGML_TYPE_F32, 3, cat->ne));
    ggml_build_forward_expand(gf, whole);
    const std::vector<float> values_then = values_of(g.values);
    ASSERT_EQ(ggml_graph_compute_with_ctx(c.get(), gf, threads), GGML_STATUS_SUCCESS);
    expect_conv_input_values(g, values_then);
    for (std::int64_t s = 0; s < 2; ++s) {
      for (std::int64_t ch = 0; ch < 33; ++ch) {
        for (std::int64_t i = 0; i < 20; ++i) {
          ASSERT_EQ(at(whole, i, ch, s), conv_input_at(g, values_then, i, ch, s))
              << "column " << i << " of channel " << ch << ", sequence " << s;
        }
      }
    }
  }
}

}  // namespace
