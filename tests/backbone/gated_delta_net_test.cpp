// ggml's CPU Gated DeltaNet recurrence (ggml_gated_delta_net, the backbone's linear-attention
// layers) against its arithmetic spelled out here, bit for bit. clef's ggml patches run it on
// column blocks of the state where the head size is a multiple of two vectors
// (cmake/patches/ggml-cpu-gated-delta-net-state-column-blocks.diff: S 64, 128, 192 on x86; the sums
// over the state's rows in four lane-wise fma chains, the decay folded into k for kv), and
// elsewhere (S 40) row by row with the pinned tree's operations
// (ggml-cpu-gated-delta-net-rows.diff: the decay, ggml_vec_dot_f32 with k, the outer product's
// multiply-add, ggml_vec_dot_f32 with q); for the scalar gate and the per-channel (KDA) one, head
// broadcast, two sequences, state snapshots; and the recurrence's own guarantees: 1 and 3 threads
// give the same bits, and two calls carrying the state give one call's.

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

/// The lanes of ggml's CPU vectors in this build (GGML_F32_EPR).
std::int64_t vector_lanes() {
  if (ggml_cpu_has_avx512() != 0) return 16;
  if (ggml_cpu_has_avx() != 0) return 8;
  return 4;
}

/// Whether the op takes clef's column blocks at head size s (two blocks of GGML_F32_EPR columns
/// at a time, rows in fours), not the pinned row-by-row form.
bool column_blocks(std::int64_t s) {
  return s % (2 * vector_lanes()) == 0 && s % 4 == 0;
}

/// One token of clef's column-block recurrence on the transposed state m (row j = column j of S),
/// per column j, with decay_i (the gate's exp) and kd_i = decay_i k_i:
///   kv = (c0 + c1) + (c2 + c3), c_r = the fma chain over i = r mod 4 of m[j][i] * kd_i
///   delta = (v[j] - kv) * beta; m[j][i] = fma(m[j][i], decay_i, k_i * delta)
///   attn[j] = ((o0 + o1) + (o2 + o3)) * scale, o_r = the fma chain over i = r mod 4 of m[j][i] q_i
void column_block_token(std::int64_t S, std::vector<float>& m, const std::vector<float>& decay,
                        const float* k, const float* q, const float* v, float beta, float scale,
                        bool fma, float* attn) {
  const auto madd = [fma](float a, float b, float c) {
    return fma ? std::fma(a, b, c) : a * b + c;
  };
  for (std::int64_t j = 0; j < S; ++j) {
    float* row = &m[j * S];
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (std::int64_t i = 0; i < S; ++i) c[i % 4] = madd(row[i], decay[i] * k[i], c[i % 4]);
    const float delta = (v[j] - ((c[0] + c[1]) + (c[2] + c[3]))) * beta;
    float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (std::int64_t i = 0; i < S; ++i) {
      row[i] = madd(row[i], decay[i], k[i] * delta);
      o[i % 4] = madd(row[i], q[i], o[i % 4]);
    }
    attn[j] = ((o[0] + o[1]) + (o[2] + o[3])) * scale;
  }
}

/// One token of the pinned tree's four passes over the transposed state m (row j = column j of
/// S): m *= decay; delta[j] = (v[j] - dot(m[j], k)) * beta; m[j] += delta[j] * k; attn[j] =
/// dot(m[j], q) * scale.
void four_pass_token(const Shape& sh, std::vector<float>& m, std::vector<float>& delta,
                     const Inputs& in, std::int64_t tok, std::int64_t h, const float* k,
                     const float* q, const float* v, float b, float scale, bool fma, float* attn) {
  const std::int64_t S = sh.s, H = sh.heads;
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
  for (std::int64_t j = 0; j < S; ++j) {
    float sum = 0.0f;
    ggml_vec_dot_f32(static_cast<int>(S), &sum, 0, &m[j * S], 0, q, 0, 1);
    attn[j] = sum * scale;
  }
}

/// The op's recurrence, same layout as run_op: clef's column blocks (column_block_token) where
/// column_blocks(S), else the pinned tree's four passes per token over the transposed state M (row
/// j = column j of S): M *= decay; delta[j] = (v[j] - dot(M[j], k)) * beta; M[j] += delta[j] * k;
/// out[j] = dot(M[j], q) / sqrt(S).
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
        float* attn = out.data() + (tok * H + h) * S;
        if (column_blocks(S)) {
          for (std::int64_t i = 0; i < S; ++i) {
            delta[i] = std::exp(sh.kda ? in.g[static_cast<std::size_t>((tok * H + h) * S + i)]
                                       : in.g[static_cast<std::size_t>(tok * H + h)]);
          }
          column_block_token(S, m, delta, k, q, v, b, scale, fma, attn);
        } else {
          four_pass_token(sh, m, delta, in, tok, h, k, q, v, b, scale, fma, attn);
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

TEST_P(GatedDeltaNet, GivesItsArithmeticBitForBit) {
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

// S = 128 (the Qwen3.5 backbones' head size), 64 and 192 take the column blocks; 40 is not a
// multiple of two vectors (x86) and keeps the rows.
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
