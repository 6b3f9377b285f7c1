// The gradients clef's ggml patch adds (cmake/patches/ggml-backward-head-training.diff): each
// operation's ggml backward against a central finite difference in double of the same
// operation's ggml forward, on random inputs. Without the patch the first five abort in
// ggml_build_backward_expand and the broadcast DIV/SUB fail the shape check or the comparison.

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpp.h>
#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace {

using Op = std::function<ggml_tensor*(ggml_context*, ggml_tensor* a, ggml_tensor* b)>;

/// f(a, b) = sum(op(a, b) * r) for fixed random r: the gradient of every element of a (and b
/// when it is trainable) by ggml's backward pass, and by finite differences of ggml's forward.
struct Check {
  std::int64_t a0, a1, b0, b1;
  bool b_trainable;
};

struct Result {
  std::vector<float> backward_a, backward_b;
  std::vector<double> numeric_a, numeric_b;
};

/// f = sum(op(a, b) * r) over fresh tensors holding `a` and `b` (params when `trainable`), in
/// `ctx`; `r` is drawn from `rng` when empty (its size is op's output's).
struct Built {
  ggml_tensor *a, *b, *f;
};

Built build(ggml_context* ctx, const Op& op, const Check& c, const std::vector<float>& a,
            const std::vector<float>& b, std::vector<float>& r, std::mt19937* rng, bool trainable) {
  ggml_tensor* ta = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c.a0, c.a1);
  ggml_tensor* tb = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c.b0, c.b1);
  std::copy(a.begin(), a.end(), static_cast<float*>(ta->data));
  std::copy(b.begin(), b.end(), static_cast<float*>(tb->data));
  if (trainable) {
    ggml_set_param(ta);
    if (c.b_trainable) ggml_set_param(tb);
  }
  ggml_tensor* y = op(ctx, ta, tb);
  if (r.empty()) {
    std::normal_distribution<float> n01(0.0f, 1.0f);
    r.resize(static_cast<std::size_t>(ggml_nelements(y)));
    for (float& x : r) x = n01(*rng);
  }
  ggml_tensor* tr = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, y->ne);
  std::copy(r.begin(), r.end(), static_cast<float*>(tr->data));
  return {ta, tb, ggml_sum(ctx, ggml_mul(ctx, y, tr))};
}

ggml_context_ptr context() {
  ggml_init_params params{64 * 1024 * 1024, nullptr, false};
  return ggml_context_ptr(ggml_init(params));
}

/// Marks `f` the loss, builds its forward and backward graph in `ctx` and computes it (one
/// thread): ggml_graph_get_grad(result, param) holds d f / d param.
ggml_cgraph* compute_gradients(ggml_context* ctx, ggml_tensor* f) {
  ggml_set_loss(f);
  ggml_cgraph* gf = ggml_new_graph_custom(ctx, GGML_DEFAULT_GRAPH_SIZE, true);
  ggml_build_forward_expand(gf, f);
  ggml_build_backward_expand(ctx, gf, nullptr);
  ggml_graph_reset(gf);
  ggml_graph_compute_with_ctx(ctx, gf, 1);
  return gf;
}

double evaluate(const Op& op, const Check& c, const std::vector<float>& a,
                const std::vector<float>& b, std::vector<float>& r) {
  ggml_context_ptr ctx = context();
  const Built g = build(ctx.get(), op, c, a, b, r, nullptr, false);
  ggml_cgraph* gf = ggml_new_graph(ctx.get());
  ggml_build_forward_expand(gf, g.f);
  ggml_graph_compute_with_ctx(ctx.get(), gf, 1);
  return *static_cast<float*>(g.f->data);
}

Result run(const Op& op, const Check& c, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(c.a0 * c.a1));
  std::vector<float> b(static_cast<std::size_t>(c.b0 * c.b1));
  for (float& x : a) x = n01(rng);
  for (float& x : b) x = 1.5f + std::abs(n01(rng));  // away from 0 (a divisor)

  ggml_context_ptr ctx = context();
  std::vector<float> r;
  const Built g = build(ctx.get(), op, c, a, b, r, &rng, true);
  ggml_tensor* ta = g.a;
  ggml_tensor* tb = g.b;
  ggml_tensor* f = g.f;
  ggml_cgraph* gf = compute_gradients(ctx.get(), f);

  Result out;
  const ggml_tensor* ga = ggml_graph_get_grad(gf, ta);
  out.backward_a.assign(static_cast<const float*>(ga->data),
                        static_cast<const float*>(ga->data) + a.size());
  if (c.b_trainable) {
    const ggml_tensor* gb = ggml_graph_get_grad(gf, tb);
    out.backward_b.assign(static_cast<const float*>(gb->data),
                          static_cast<const float*>(gb->data) + b.size());
  }
  const float h = 1e-2f;
  auto numeric = [&](std::vector<float>& x) {
    std::vector<double> g(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float keep = x[i];
      x[i] = keep + h;
      const double up = evaluate(op, c, a, b, r);
      x[i] = keep - h;
      const double down = evaluate(op, c, a, b, r);
      x[i] = keep;
      g[i] = (up - down) / (2.0 * h);
    }
    return g;
  };
  out.numeric_a = numeric(a);
  if (c.b_trainable) out.numeric_b = numeric(b);
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  double largest = 0;
  for (double w : want) largest = std::max(largest, std::abs(w));
  ASSERT_GT(largest, 0.0);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 2e-2 * largest) << "element " << i;
  }
}

void check(const Op& op, const Check& c) {
  for (std::uint32_t seed : {1u, 2u}) {
    const Result r = run(op, c, seed);
    expect_close(r.backward_a, r.numeric_a);
    if (c.b_trainable) expect_close(r.backward_b, r.numeric_b);
  }
}

TEST(BackwardOps, Norm) {
  check([](ggml_context* ctx, ggml_tensor* a, ggml_tensor*) { return ggml_norm(ctx, a, 1e-5f); },
        {8, 3, 1, 1, false});
}

TEST(BackwardOps, GeluErf) {
  check([](ggml_context* ctx, ggml_tensor* a, ggml_tensor*) { return ggml_gelu_erf(ctx, a); },
        {16, 2, 1, 1, false});
}

TEST(BackwardOps, GeluErfAtZero) {
  // The exact 0 takes the series branch: Phi(0) = 0.5.
  ggml_init_params params{16 * 1024 * 1024, nullptr, false};
  ggml_context_ptr ctx(ggml_init(params));
  ggml_tensor* x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 3);
  const float values[3] = {0.0f, 1e-8f, -1e-7f};
  std::copy(values, values + 3, static_cast<float*>(x->data));
  ggml_set_param(x);
  ggml_tensor* f = ggml_sum(ctx.get(), ggml_gelu_erf(ctx.get(), x));
  ggml_cgraph* gf = compute_gradients(ctx.get(), f);
  const float* g = static_cast<const float*>(ggml_graph_get_grad(gf, x)->data);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[i], 0.5, 1e-6) << values[i];
}

TEST(BackwardOps, Sigmoid) {
  check([](ggml_context* ctx, ggml_tensor* a, ggml_tensor*) { return ggml_sigmoid(ctx, a); },
        {6, 2, 1, 1, false});
}

TEST(BackwardOps, ClampPassesInsideAndStopsOutside) {
  check([](ggml_context* ctx, ggml_tensor* a,
           ggml_tensor*) { return ggml_clamp(ctx, a, -0.5f, 0.7f); },
        {32, 1, 1, 1, false});
}

TEST(BackwardOps, Concat) {
  check([](ggml_context* ctx, ggml_tensor* a, ggml_tensor* b) { return ggml_concat(ctx, a, b, 0); },
        {4, 3, 5, 3, true});
  check([](ggml_context* ctx, ggml_tensor* a, ggml_tensor* b) { return ggml_concat(ctx, a, b, 1); },
        {4, 3, 4, 2, true});
}

TEST(BackwardOps, DivByABroadcastRow) {
  check([](ggml_context* ctx, ggml_tensor* a, ggml_tensor* b) { return ggml_div(ctx, a, b); },
        {5, 3, 1, 3, true});
}

TEST(BackwardOps, SubABroadcastRow) {
  check([](ggml_context* ctx, ggml_tensor* a, ggml_tensor* b) { return ggml_sub(ctx, a, b); },
        {5, 3, 1, 3, true});
}

}  // namespace
