// ggml's CPU Gated DeltaNet recurrence (ggml_gated_delta_net, the backbone's linear-attention
// layers), which clef's ggml patch (cmake/patches/ggml-cpu-gated-delta-net-rows.diff) runs a block
// of state rows at a time for speed (k and q in registers where a row is 8 vectors: S 128 on
// AVX-512, 64 on AVX2; blocks from memory at other multiples of the vector step, such as 64 and
// 192 on AVX-512; the pinned functions row by row elsewhere, such as 40): against the pinned tree's
// four passes over the state spelled out here with the same operations (the decay, ggml_vec_dot_f32
// with k, the outer product's multiply-add, ggml_vec_dot_f32 with q), bit for bit, for the scalar
// gate and the per-channel (KDA) one, head broadcast, two sequences, state snapshots; and the
// recurrence's own guarantees: 1 and 3 threads give the same bits, and two calls carrying the state
// give one call's.

#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/ggml_cpu_graph.hpp"

extern "C" void ggml_vec_dot_f32(int n, float* s, std::size_t bs, const float* x, std::size_t bx,
                                 const float* y, std::size_t by, int nrc);

namespace {

using clef::test::at;
using clef::test::compute;

struct Shape {
  std::int64_t s;       // S_v = S_k
  std::int64_t heads;   // H_v
  std::int64_t kheads;  // H_k (divides H_v)
  std::int64_t tokens;
  std::int64_t seqs;
  bool kda;        // g per channel
  std::int64_t k;  // snapshot slots
};

struct Inputs {
  std::vector<float> q, k, v, g, beta, state;
};

Inputs random_inputs(const Shape& sh, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Inputs in;
  const auto fill = [&](std::vector<float>& x, std::int64_t count, auto&& draw) {
    x.resize(static_cast<std::size_t>(count));
    for (float& e : x) e = draw();
  };
  const std::int64_t t = sh.tokens * sh.seqs;
  // q, k as the backbone feeds them: L2-normalised rows (values ~ 1/sqrt(S))
  const float unit = 1.0f / std::sqrt(static_cast<float>(sh.s));
  fill(in.q, sh.s * sh.kheads * t, [&] { return n(rng) * unit; });
  fill(in.k, sh.s * sh.kheads * t, [&] { return n(rng) * unit; });
  fill(in.v, sh.s * sh.heads * t, [&] { return n(rng); });
  fill(in.g, (sh.kda ? sh.s : 1) * sh.heads * t, [&] { return -0.5f * u(rng); });
  fill(in.beta, sh.heads * t, [&] { return u(rng); });
  fill(in.state, sh.s * sh.s * sh.heads * sh.seqs, [&] { return 0.1f * n(rng); });
  return in;
}

/// The op's output on tokens [t0, t0 + count) of every sequence from `state`: attention scores
/// [S, H, count, seqs] then the K snapshots of the state.
std::vector<float> run_op(const Shape& sh, const Inputs& in, const std::vector<float>& state,
                          std::int64_t t0, std::int64_t count, int threads) {
  const ggml_context_ptr c = clef::test::cpu_context(256 * 1024 * 1024);
  ggml_context* ctx = c.get();
  const auto tensor = [&](const std::vector<float>& src, std::int64_t ne0, std::int64_t ne1) {
    ggml_tensor* x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ne0, ne1, count, sh.seqs);
    auto* d = static_cast<float*>(x->data);
    for (std::int64_t s = 0; s < sh.seqs; ++s) {
      for (std::int64_t t = 0; t < count; ++t) {
        std::memcpy(d + (s * count + t) * ne0 * ne1,
                    src.data() + (s * sh.tokens + t0 + t) * ne0 * ne1,
                    sizeof(float) * static_cast<std::size_t>(ne0 * ne1));
      }
    }
    return x;
  };
  ggml_tensor* q = tensor(in.q, sh.s, sh.kheads);
  ggml_tensor* k = tensor(in.k, sh.s, sh.kheads);
  ggml_tensor* v = tensor(in.v, sh.s, sh.heads);
  ggml_tensor* g = tensor(in.g, sh.kda ? sh.s : 1, sh.heads);
  ggml_tensor* beta = tensor(in.beta, 1, sh.heads);
  ggml_tensor* s0 = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, sh.s, sh.s, sh.heads, sh.seqs);
  std::memcpy(s0->data, state.data(), sizeof(float) * state.size());
  ggml_tensor* out = ggml_gated_delta_net(ctx, q, k, v, g, beta, s0, sh.k);
  compute(ctx, out, threads);
  const auto* o = static_cast<const float*>(out->data);
  return std::vector<float>(o, o + ggml_nelements(out));
}

/// The pinned tree's recurrence: per token four passes over the transposed state M (row j =
/// column j of S): M *= decay; delta[j] = (v[j] - dot(M[j], k)) * beta; M[j] += delta[j] * k;
/// out[j] = dot(M[j], q) / sqrt(S). Same layout as run_op.
std::vector<float> reference(const Shape& sh, const Inputs& in) {
  const std::int64_t S = sh.s, H = sh.heads, T = sh.tokens, N = sh.seqs;
  const std::int64_t snap = S * S * H * N;
  std::vector<float> out(static_cast<std::size_t>(S * H * T * N + snap * sh.k), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  const bool fma = ggml_cpu_has_fma() != 0;
  std::vector<float> m(static_cast<std::size_t>(S * S));
  std::vector<float> delta(static_cast<std::size_t>(S));
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t h = 0; h < H; ++h) {
      std::memcpy(m.data(), in.state.data() + (n * H + h) * S * S, sizeof(float) * m.size());
      const std::int64_t hk = h % sh.kheads;
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t tok = n * T + t;
        const float* q = in.q.data() + (tok * sh.kheads + hk) * S;
        const float* k = in.k.data() + (tok * sh.kheads + hk) * S;
        const float* v = in.v.data() + (tok * H + h) * S;
        const float b = in.beta[static_cast<std::size_t>(tok * H + h)];
        if (sh.kda) {
          const float* g = in.g.data() + (tok * H + h) * S;
          for (std::int64_t i = 0; i < S; ++i) delta[i] = std::exp(g[i]);
          for (std::int64_t j = 0; j < S; ++j)
            for (std::int64_t i = 0; i < S; ++i) m[j * S + i] *= delta[i];
        } else {
          const float e = std::exp(in.g[static_cast<std::size_t>(tok * H + h)]);
          for (float& x : m) x *= e;
        }
        for (std::int64_t j = 0; j < S; ++j) {
          float sum = 0.0f;
          ggml_vec_dot_f32(static_cast<int>(S), &sum, 0, &m[j * S], 0, k, 0, 1);
          delta[j] = (v[j] - sum) * b;
        }
        for (std::int64_t j = 0; j < S; ++j) {
          for (std::int64_t i = 0; i < S; ++i) {
            float& x = m[j * S + i];
            x = fma ? std::fma(k[i], delta[j], x) : x + k[i] * delta[j];
          }
        }
        float* attn = out.data() + (tok * H + h) * S;
        for (std::int64_t j = 0; j < S; ++j) {
          float sum = 0.0f;
          ggml_vec_dot_f32(static_cast<int>(S), &sum, 0, &m[j * S], 0, q, 0, 1);
          attn[j] = sum * scale;
        }
        const std::int64_t slot = T - 1 - t;
        if (slot < sh.k) {
          std::memcpy(out.data() + S * H * T * N + slot * snap + (n * H + h) * S * S, m.data(),
                      sizeof(float) * m.size());
        }
      }
    }
  }
  return out;
}

/// Elements of `got` whose bits differ from `want`'s (the first few reported).
int differing(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && ++bad <= 3) {
      ADD_FAILURE() << what << " element " << i << ": " << got[i] << " (want " << want[i] << ")";
    }
  }
  return bad;
}

class GatedDeltaNet : public testing::TestWithParam<Shape> {};

TEST_P(GatedDeltaNet, GivesThePinnedFourPassValuesBitForBit) {
  const Shape sh = GetParam();
  const Inputs in = random_inputs(sh, static_cast<unsigned>(sh.s * 7 + sh.tokens));
  const std::vector<float> want = reference(sh, in);
  for (int threads : {1, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    EXPECT_EQ(differing(run_op(sh, in, in.state, 0, sh.tokens, threads), want, "op"), 0);
  }
}

TEST_P(GatedDeltaNet, TwoCallsCarryingTheStateGiveOneCallsBits) {
  const Shape sh = GetParam();
  const Inputs in = random_inputs(sh, static_cast<unsigned>(sh.s * 11 + sh.tokens));
  const std::vector<float> one = run_op(sh, in, in.state, 0, sh.tokens, 2);
  const std::int64_t first = (sh.tokens + 1) / 2;  // shapes have 2 tokens or more
  const std::int64_t S = sh.s, H = sh.heads, N = sh.seqs;
  const std::vector<float> a = run_op(sh, in, in.state, 0, first, 2);
  // slot 0 of the first call: the state after its last token, the second call's start
  const std::vector<float> mid(a.begin() + S * H * first * N,
                               a.begin() + S * H * first * N + S * S * H * N);
  const std::vector<float> b = run_op(sh, in, mid, first, sh.tokens - first, 2);
  std::vector<float> attn(static_cast<std::size_t>(S * H * sh.tokens * N));
  std::vector<float> joined = attn;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t t = 0; t < sh.tokens; ++t) {
      const float* src = t < first ? a.data() + (n * first + t) * S * H
                                   : b.data() + (n * (sh.tokens - first) + t - first) * S * H;
      std::memcpy(joined.data() + (n * sh.tokens + t) * S * H, src, sizeof(float) * S * H);
    }
  }
  std::memcpy(attn.data(), one.data(), sizeof(float) * attn.size());
  EXPECT_EQ(differing(joined, attn, "attention"), 0);
  const std::vector<float> final_one(one.begin() + S * H * sh.tokens * N,
                                     one.begin() + S * H * sh.tokens * N + S * S * H * N);
  const std::vector<float> final_two(b.begin() + S * H * (sh.tokens - first) * N,
                                     b.begin() + S * H * (sh.tokens - first) * N + S * S * H * N);
  EXPECT_EQ(differing(final_two, final_one, "final state"), 0);
}

// S = 128 (the Qwen3.5 backbones' head size) and 64 take the one-pass rows; 40 is not a multiple
// of the vector step and keeps the four calls.
INSTANTIATE_TEST_SUITE_P(
    HeadsTokensAndGates, GatedDeltaNet,
    testing::Values(Shape{128, 4, 4, 9, 1, false, 1}, Shape{128, 4, 2, 5, 2, false, 3},
                    Shape{64, 3, 3, 17, 1, true, 1}, Shape{128, 2, 1, 6, 2, true, 4},
                    Shape{40, 2, 2, 7, 1, false, 2}, Shape{128, 2, 2, 2, 1, false, 1},
                    Shape{192, 2, 2, 3, 1, false, 1}),
    [](const testing::TestParamInfo<Shape>& info) {
      const Shape& s = info.param;
      std::ostringstream name;
      name << 's' << s.s << "_h" << s.heads << "_hk" << s.kheads << "_t" << s.tokens << "_n"
           << s.seqs << (s.kda ? "_kda" : "_scalar") << "_k" << s.k;
      return name.str();
    });

}  // namespace
