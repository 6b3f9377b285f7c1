// Repacked matrix products in a row on the same activations (cmake/patches/ggml-cpu-wdata-
// src1-quantized-once.diff: the delta layers' projections, the FFN's gate and up, attention's q, k
// and v quantize their shared src1 once): each product's bytes equal the same product computed
// alone, in its own graph; and where a node between two products writes into their src1's memory
// (an in-place op on it), the second product quantizes the new values again.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace {

constexpr std::int64_t kK = 512;  // two superblocks
constexpr std::int64_t kRows = 64;
constexpr std::int64_t kTokens = 13;  // 3 row blocks of 4 and a last row

ggml_backend_buffer_type_t repack_buffer_type() {
  ggml_backend_reg_t reg = ggml_backend_cpu_reg();
  if (reg == nullptr || ggml_backend_reg_dev_count(reg) == 0) return nullptr;
  ggml_backend_dev_t cpu = ggml_backend_reg_dev_get(reg, 0);
  auto get_extra = reinterpret_cast<ggml_backend_buffer_type_t* (*)(ggml_backend_dev_t)>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
  if (get_extra == nullptr) return nullptr;
  for (ggml_backend_buffer_type_t* b = get_extra(cpu); b != nullptr && *b != nullptr; ++b) {
    if (std::string(ggml_backend_buft_name(*b)) == "CPU_REPACK") return *b;
  }
  return nullptr;
}

std::vector<float> normal_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

/// Q4_K weights (rows x kK) in the repack buffer, and the activations, for one test.
class RepackedSrc1Reuse : public testing::Test {
 protected:
  void SetUp() override {
    buft_ = repack_buffer_type();
    if (buft_ == nullptr) GTEST_SKIP() << "no CPU_REPACK buffer type in this build";
    backend_ = ggml_backend_cpu_init();
    ASSERT_NE(backend_, nullptr);
    ggml_backend_cpu_set_n_threads(backend_, 2);
    ggml_init_params wp = {ggml_tensor_overhead() * 4, nullptr, true};
    weights_ctx_ = ggml_init(wp);
    for (int i = 0; i < 3; ++i) {
      w_[i] = ggml_new_tensor_2d(weights_ctx_, GGML_TYPE_Q4_K, kK, kRows);
    }
    weights_ = ggml_backend_alloc_ctx_tensors_from_buft(weights_ctx_, buft_);
    ASSERT_NE(weights_, nullptr);
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> f = normal_values(kK * kRows, 11u + i);
      std::vector<std::uint8_t> q(ggml_row_size(GGML_TYPE_Q4_K, kK) * kRows);
      ggml_quantize_chunk(GGML_TYPE_Q4_K, f.data(), q.data(), 0, kRows, kK, nullptr);
      ggml_backend_tensor_set(w_[i], q.data(), 0, q.size());
    }
    x_ = normal_values(kK * kTokens, 7u);
  }

  void TearDown() override {
    if (weights_ != nullptr) ggml_backend_buffer_free(weights_);
    if (weights_ctx_ != nullptr) ggml_free(weights_ctx_);
    if (backend_ != nullptr) ggml_backend_free(backend_);
  }

  /// The outputs of `build` (a graph over the activations tensor x, returning its outputs in
  /// order), each [kRows, kTokens].
  template <typename Build>
  std::vector<std::vector<float>> run(Build build) {
    ggml_init_params p = {ggml_tensor_overhead() * 64 + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kK, kTokens);
    ggml_set_input(x);
    const std::vector<ggml_tensor*> outs = build(ctx, x);
    ggml_cgraph* graph = ggml_new_graph(ctx);
    for (ggml_tensor* o : outs) {
      ggml_set_output(o);
      ggml_build_forward_expand(graph, o);
    }
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend_);
    ggml_backend_tensor_set(x, x_.data(), 0, sizeof(float) * x_.size());
    EXPECT_EQ(ggml_backend_graph_compute(backend_, graph), GGML_STATUS_SUCCESS);
    std::vector<std::vector<float>> values;
    for (ggml_tensor* o : outs) {
      std::vector<float> v(static_cast<std::size_t>(ggml_nelements(o)));
      ggml_backend_tensor_get(o, v.data(), 0, sizeof(float) * v.size());
      values.push_back(std::move(v));
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return values;
  }

  ggml_backend_buffer_type_t buft_ = nullptr;
  ggml_backend_t backend_ = nullptr;
  ggml_context* weights_ctx_ = nullptr;
  ggml_backend_buffer_t weights_ = nullptr;
  ggml_tensor* w_[3] = {};
  std::vector<float> x_;
};

TEST_F(RepackedSrc1Reuse, ProductsInARowGiveEachProductAlonesBytes) {
  const auto together = run([&](ggml_context* ctx, ggml_tensor* x) {
    return std::vector<ggml_tensor*>{ggml_mul_mat(ctx, w_[0], x), ggml_mul_mat(ctx, w_[1], x),
                                     ggml_mul_mat(ctx, w_[2], x)};
  });
  for (int i = 0; i < 3; ++i) {
    const auto alone = run([&](ggml_context* ctx, ggml_tensor* x) {
      return std::vector<ggml_tensor*>{ggml_mul_mat(ctx, w_[i], x)};
    });
    ASSERT_EQ(together[i].size(), alone[0].size());
    EXPECT_EQ(std::memcmp(together[i].data(), alone[0].data(), sizeof(float) * alone[0].size()), 0)
        << "product " << i;
  }
}

TEST_F(RepackedSrc1Reuse, ANodeWritingIntoSrc1BetweenTwoProductsMakesTheSecondQuantizeAgain) {
  // y0 = W0 x; x *= 2 in place (a node between, writing into x's memory); y1 = W1 x.
  const auto between = run([&](ggml_context* ctx, ggml_tensor* x) {
    ggml_tensor* y0 = ggml_mul_mat(ctx, w_[0], x);
    ggml_tensor* doubled = ggml_scale_inplace(ctx, x, 2.0f);
    ggml_tensor* y1 = ggml_mul_mat(ctx, w_[1], x);
    // expanded in this order, the graph runs y0, the scale (writing into x), then y1
    return std::vector<ggml_tensor*>{y0, doubled, y1};
  });
  const auto doubled_alone = run([&](ggml_context* ctx, ggml_tensor* x) {
    return std::vector<ggml_tensor*>{ggml_mul_mat(ctx, w_[1], ggml_scale(ctx, x, 2.0f))};
  });
  ASSERT_EQ(between[2].size(), doubled_alone[0].size());
  EXPECT_EQ(
      std::memcmp(between[2].data(), doubled_alone[0].data(), sizeof(float) * between[2].size()),
      0);
}

}  // namespace
