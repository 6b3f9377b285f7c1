// The CPU's F16 / F32 x F32 matrix products on AVX-512 (cmake/patches/ggml-cpu-x86-f32-outer-
// product-gemm.diff: the qwen35 backbones' attention products KQ and KQV, the joint schema head's
// linear layers, the vision tower's F16 weights) against their arithmetic spelled out here, bit
// for bit: each output is sum_k src0[m][k] * src1[n][k] as one chain of fused multiply-adds in the
// order of k from +0 (an F16 src0 converted exactly, src1 as it is), whatever the row counts (tails
// of the 32-row panels and the 12-row tiles), the depth (blocks of 256 k and their tail), a
// permuted src1 whose heads share src0 (grouped-query attention) and the thread count; so a row
// of src1 gives the same values alone as in any batch of rows (chunked prefill, state-cache cuts).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"

namespace {

struct Shape {
  ggml_type src0;
  std::int64_t k, m, n;
  std::int64_t heads;     // src1 batches
  std::int64_t kv_heads;  // src0 batches (divides heads)
  bool permuted;          // src1 as attention's q: [k, heads, n] permuted to [k, n, heads]
  int threads;
};

/// dst = mul_mat(src0, src1) computed by ggml-cpu, [m, n, heads] as floats, for src0 values `a`
/// ([kv_heads][m][k], already representable in src0's type) and src1 values `b` ([heads][n][k]).
std::vector<float> product(const Shape& sh, const std::vector<float>& a,
                           const std::vector<float>& b) {
  ggml_init_params params = {std::size_t{256} << 20, nullptr, false};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* w = ggml_new_tensor_3d(ctx, sh.src0, sh.k, sh.m, sh.kv_heads);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (sh.src0 == GGML_TYPE_F16) {
      static_cast<ggml_fp16_t*>(w->data)[i] = ggml_fp32_to_fp16(a[i]);
    } else {
      static_cast<float*>(w->data)[i] = a[i];
    }
  }
  ggml_tensor* x = nullptr;
  if (sh.permuted) {
    ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, sh.k, sh.heads, sh.n);
    for (std::int64_t h = 0; h < sh.heads; ++h) {
      for (std::int64_t n = 0; n < sh.n; ++n) {
        std::memcpy(static_cast<float*>(q->data) + (n * sh.heads + h) * sh.k,
                    b.data() + (h * sh.n + n) * sh.k, sizeof(float) * sh.k);
      }
    }
    x = ggml_permute(ctx, q, 0, 2, 1, 3);
  } else {
    x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, sh.k, sh.n, sh.heads);
    std::memcpy(x->data, b.data(), sizeof(float) * b.size());
  }
  ggml_tensor* y = ggml_mul_mat(ctx, w, x);
  ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, y);
  EXPECT_EQ(ggml_graph_compute_with_ctx(ctx, graph, sh.threads), GGML_STATUS_SUCCESS);
  std::vector<float> out(static_cast<std::size_t>(sh.m * sh.n * sh.heads));
  std::memcpy(out.data(), y->data, sizeof(float) * out.size());
  ggml_free(ctx);
  return out;
}

/// The same values by the definition: per output one std::fma chain over k from +0.
std::vector<float> reference(const Shape& sh, const std::vector<float>& a,
                             const std::vector<float>& b) {
  std::vector<float> out(static_cast<std::size_t>(sh.m * sh.n * sh.heads));
  const std::int64_t group = sh.heads / sh.kv_heads;
  for (std::int64_t h = 0; h < sh.heads; ++h) {
    for (std::int64_t n = 0; n < sh.n; ++n) {
      for (std::int64_t m = 0; m < sh.m; ++m) {
        const float* row = a.data() + ((h / group) * sh.m + m) * sh.k;
        const float* col = b.data() + (h * sh.n + n) * sh.k;
        float acc = 0.0f;
        for (std::int64_t k = 0; k < sh.k; ++k) acc = std::fma(row[k], col[k], acc);
        out[static_cast<std::size_t>((h * sh.n + n) * sh.m + m)] = acc;
      }
    }
  }
  return out;
}

struct Inputs {
  std::vector<float> a, b;
};

Inputs random_inputs(const Shape& sh, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Inputs in;
  in.a.resize(static_cast<std::size_t>(sh.k * sh.m * sh.kv_heads));
  for (float& v : in.a) {
    v = normal(rng);
    if (sh.src0 == GGML_TYPE_F16) v = ggml_fp16_to_fp32(ggml_fp32_to_fp16(v));
  }
  in.b.resize(static_cast<std::size_t>(sh.k * sh.n * sh.heads));
  for (float& v : in.b) v = normal(rng);
  return in;
}

int differing(const std::vector<float>& got, const std::vector<float>& want) {
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      if (bad < 5) ADD_FAILURE() << "output " << i << ": " << got[i] << " want " << want[i];
      ++bad;
    }
  }
  return bad;
}

class OuterProductGemm : public testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    if (ggml_cpu_has_avx512() == 0) {
      GTEST_SKIP()
          << "the outer-product kernel is AVX-512's; elsewhere tinyBLAS keeps its own sums";
    }
  }
};

TEST_P(OuterProductGemm, IsOneFmaChainAnOutputBitForBit) {
  const Shape sh = GetParam();
  const Inputs in = random_inputs(sh, static_cast<unsigned>(sh.k * 31 + sh.m * 7 + sh.n));
  EXPECT_EQ(differing(product(sh, in.a, in.b), reference(sh, in.a, in.b)), 0);
}

TEST_P(OuterProductGemm, GivesARowAloneItsValuesInTheBatch) {
  const Shape sh = GetParam();
  const Inputs in = random_inputs(sh, static_cast<unsigned>(sh.k * 13 + sh.n));
  const std::vector<float> batch = product(sh, in.a, in.b);
  Shape one = sh;
  one.n = 1;
  one.threads = 1;
  const std::int64_t row = sh.n / 2;
  std::vector<float> b_one;
  for (std::int64_t h = 0; h < sh.heads; ++h) {
    const float* col = in.b.data() + (h * sh.n + row) * sh.k;
    b_one.insert(b_one.end(), col, col + sh.k);
  }
  const std::vector<float> alone = product(one, in.a, b_one);
  for (std::int64_t h = 0; h < sh.heads; ++h) {
    const float* want = batch.data() + (h * sh.n + row) * sh.m;
    EXPECT_EQ(std::memcmp(alone.data() + h * sh.m, want, sizeof(float) * sh.m), 0) << "head " << h;
  }
}

// KQ-like (k 256, a permuted q, 2 heads on each src0 batch), KQV-like (k past 1,000: blocks of
// 256 and a tail), the head's linear layers (F32, contiguous), tails of every tile, 1-3 threads.
INSTANTIATE_TEST_SUITE_P(ShapesAndThreads, OuterProductGemm,
                         testing::Values(Shape{GGML_TYPE_F16, 256, 45, 13, 4, 2, true, 2},
                                         Shape{GGML_TYPE_F16, 1023, 70, 7, 2, 1, false, 2},
                                         Shape{GGML_TYPE_F32, 300, 96, 25, 1, 1, false, 1},
                                         Shape{GGML_TYPE_F32, 17, 33, 2, 2, 2, true, 3},
                                         Shape{GGML_TYPE_F32, 512, 8, 40, 1, 1, false, 3}),
                         [](const testing::TestParamInfo<Shape>& info) {
                           const Shape& s = info.param;
                           std::ostringstream name;
                           name << (s.src0 == GGML_TYPE_F16 ? "f16" : "f32") << "_k" << s.k << "_m"
                                << s.m << "_n" << s.n << "_h" << s.heads << "_hk" << s.kv_heads
                                << (s.permuted ? "_permuted" : "") << "_t" << s.threads;
                           return name.str();
                         });

}  // namespace
