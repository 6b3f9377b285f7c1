#pragma once
// Test support for tests of ggml's CPU kernels: a context holding its tensors' data, random
// normal values, one node computed with a thread count, and an element read through a tensor's
// strides.

#include <ggml-cpp.h>
#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

namespace clef::test {

/// A ggml context of `bytes` whose tensors hold their data (the CPU computes in it).
inline ggml_context_ptr cpu_context(std::size_t bytes = 64 * 1024 * 1024) {
  return ggml_context_ptr(ggml_init({bytes, nullptr, false}));
}

/// Computes `out` (and what it needs) on the CPU with `threads` threads; fails the test when ggml
/// does not.
inline void compute(ggml_context* ctx, ggml_tensor* out, int threads) {
  ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, threads), GGML_STATUS_SUCCESS);
}

/// Fills the f32 tensor `t` (its data in a cpu_context) with normal values of mean 0 and
/// `stddev`, drawn in element order from std::mt19937(seed).
inline void fill_normal(ggml_tensor* t, unsigned seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, stddev);
  auto* v = static_cast<float*>(t->data);
  for (std::int64_t i = 0; i < ggml_nelements(t); ++i) v[i] = n(rng);
}

/// Element (i0, i1, i2, i3) of any f32 tensor, through its strides.
inline float at(const ggml_tensor* t, std::int64_t i0, std::int64_t i1, std::int64_t i2,
                std::int64_t i3 = 0) {
  const char* p = static_cast<const char*>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] +
                  i2 * t->nb[2] + i3 * t->nb[3];
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace clef::test
