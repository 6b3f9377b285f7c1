#include "head/head_graph_ops.hpp"

#include <cmath>
#include <limits>
#include <span>

namespace clef::head {

namespace {

constexpr float kLayerNormEps = 1e-5f;   // nn.LayerNorm / TransformerDecoderLayer default
constexpr float kNormalizeEps = 1e-12f;  // F.normalize default
constexpr float kCosineEpsSq = 1e-16f;   // cosine_similarity eps 1e-8, squared
constexpr float kInf = std::numeric_limits<float>::infinity();

/// Rows [i*E, (i+1)*E) of a packed in_proj weight (ggml [E, 3E]): ggml [E, E].
ggml_tensor* packed_weight(ggml_context* ctx, ggml_tensor* w, std::int64_t i) {
  const std::int64_t e = w->ne[0];
  return ggml_view_2d(ctx, w, e, e, w->nb[1], static_cast<std::size_t>(i * e) * w->nb[1]);
}

/// Entries [i*E, (i+1)*E) of a packed in_proj bias ([3E]).
ggml_tensor* packed_bias(ggml_context* ctx, ggml_tensor* b, std::int64_t i) {
  const std::int64_t e = b->ne[0] / 3;
  return ggml_view_1d(ctx, b, e, static_cast<std::size_t>(i * e) * b->nb[0]);
}

/// Contiguous [E, rows] -> [d, rows, heads] (contiguous), head h taking columns [h*d, (h+1)*d).
ggml_tensor* split_heads(ggml_context* ctx, ggml_tensor* x, std::int64_t n_heads) {
  const std::int64_t d = x->ne[0] / n_heads;
  ggml_tensor* r = ggml_reshape_3d(ctx, x, d, n_heads, x->ne[1]);
  return ggml_cont(ctx, ggml_permute(ctx, r, 0, 2, 1, 3));
}

}  // namespace

ggml_tensor* normalize(ggml_context* ctx, ggml_tensor* x) {
  return ggml_norm(ctx, x, kLayerNormEps);
}

ggml_tensor* layer_norm_affine(ggml_context* ctx, ggml_tensor* y, const LayerNormTensors& p) {
  return ggml_add(ctx, ggml_mul(ctx, y, p.weight), p.bias);
}

ggml_tensor* layer_norm(ggml_context* ctx, ggml_tensor* x, const LayerNormTensors& p) {
  return layer_norm_affine(ctx, normalize(ctx, x), p);
}

ggml_tensor* folded_linear(ggml_context* ctx, ggml_tensor* y, const LayerNormTensors& norm,
                           const LinearTensors& p) {
  // W is ggml [in, out]: the norm's weight [in] scales each of its rows of `in` values; W bias is
  // each output's sum over `in` of W * bias (elementwise products and a row sum: their gradients
  // need no transposed copy of W).
  ggml_tensor* scaled = ggml_mul(ctx, p.weight, norm.weight);
  ggml_tensor* shift = ggml_sum_rows(ctx, ggml_mul(ctx, p.weight, norm.bias));  // [1, out]
  shift = ggml_reshape_1d(ctx, shift, p.weight->ne[1]);
  if (p.bias != nullptr) shift = ggml_add(ctx, shift, p.bias);
  return ggml_add(ctx, ggml_mul_mat(ctx, scaled, y), shift);
}

ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, const LinearTensors& p) {
  ggml_tensor* y = ggml_mul_mat(ctx, p.weight, x);
  return p.bias != nullptr ? ggml_add(ctx, y, p.bias) : y;
}

ggml_tensor* gelu(ggml_context* ctx, ggml_tensor* x) {
  return ggml_gelu_erf(ctx, x);
}

ggml_tensor* feed_forward(ggml_context* ctx, ggml_tensor* x, const LinearTensors& first,
                          const LinearTensors& second) {
  return linear(ctx, gelu(ctx, linear(ctx, x, first)), second);
}

ggml_tensor* attend(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                    std::int64_t n_heads, ggml_tensor* mask) {
  const std::int64_t e = q->ne[0];
  const std::int64_t n_q = q->ne[1];
  const std::int64_t n_kv = k->ne[1];
  const std::int64_t d = e / n_heads;
  ggml_tensor* qh = split_heads(ctx, q, n_heads);  // [d, L, h]
  ggml_tensor* kh = split_heads(ctx, k, n_heads);  // [d, S, h]
  // V as [S, d, h] so that the second product contracts over S.
  ggml_tensor* vt =
      ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, v, d, n_heads, n_kv), 1, 2, 0, 3));

  ggml_tensor* scores = ggml_mul_mat(ctx, kh, qh);                             // [S, L, h]
  ggml_tensor* probs = ggml_soft_max_ext(ctx, scores, mask, 1.0f, 0.0f);       // over S
  ggml_tensor* heads = ggml_mul_mat(ctx, vt, probs);                           // [d, L, h]
  ggml_tensor* merged = ggml_cont(ctx, ggml_permute(ctx, heads, 0, 2, 1, 3));  // [d, h, L]
  return ggml_reshape_2d(ctx, merged, e, n_q);
}

namespace {

/// Q = (x Wq^T + bq) / sqrt(d) (torch 1.13 divides before the matmul).
ggml_tensor* project_queries(ggml_context* ctx, ggml_tensor* x, const AttentionTensors& p,
                             ggml_tensor* sqrt_d) {
  ggml_tensor* q = ggml_add(ctx, ggml_mul_mat(ctx, packed_weight(ctx, p.in_proj_weight, 0), x),
                            packed_bias(ctx, p.in_proj_bias, 0));
  return ggml_div(ctx, q, sqrt_d);
}

/// K or V (i = 1, 2) of memory m: m W^T + b.
ggml_tensor* project_memory(ggml_context* ctx, ggml_tensor* m, const AttentionTensors& p,
                            std::int64_t i) {
  return ggml_add(ctx, ggml_mul_mat(ctx, packed_weight(ctx, p.in_proj_weight, i), m),
                  packed_bias(ctx, p.in_proj_bias, i));
}

}  // namespace

ggml_tensor* multi_head_attention(ggml_context* ctx, ggml_tensor* x, ggml_tensor* m,
                                  const AttentionTensors& p, std::int64_t n_heads,
                                  ggml_tensor* sqrt_d, ggml_tensor* mask) {
  ggml_tensor* q = project_queries(ctx, x, p, sqrt_d);
  ggml_tensor* k = project_memory(ctx, m, p, 1);
  ggml_tensor* v = project_memory(ctx, m, p, 2);
  return linear(ctx, attend(ctx, q, k, v, n_heads, mask), p.out_proj);
}

ggml_tensor* l2_normalize(ggml_context* ctx, ggml_tensor* v) {
  ggml_tensor* norm = ggml_sqrt(ctx, ggml_sum_rows(ctx, ggml_sqr(ctx, v)));
  return ggml_div(ctx, v, ggml_clamp(ctx, norm, kNormalizeEps, kInf));
}

ggml_tensor* cosine_similarity(ggml_context* ctx, ggml_tensor* a, ggml_tensor* b) {
  ggml_tensor* na =
      ggml_sqrt(ctx, ggml_clamp(ctx, ggml_sum_rows(ctx, ggml_sqr(ctx, a)), kCosineEpsSq, kInf));
  ggml_tensor* nb =
      ggml_sqrt(ctx, ggml_clamp(ctx, ggml_sum_rows(ctx, ggml_sqr(ctx, b)), kCosineEpsSq, kInf));
  return ggml_sum_rows(ctx, ggml_mul(ctx, ggml_div(ctx, a, na), ggml_div(ctx, b, nb)));
}

ggml_tensor* clamped_exp_scale(ggml_context* ctx, ggml_tensor* s) {
  const float max_log_scale = static_cast<float>(std::log(100.0));  // f32(ln 100) = 0x40935D8E
  return ggml_exp(ctx, ggml_clamp(ctx, s, -kInf, max_log_scale));
}

}  // namespace clef::head
