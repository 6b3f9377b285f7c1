#pragma once
// ggml building blocks of the joint schema head, each matching one formula of the reference
// (tests/data/oracle/head/README.md, "The forward pass, precisely"). All tensors are f32.
// Layout convention: a row-major torch matrix [rows, cols] is a ggml tensor with
// ne = [cols, rows] (ne[0] is the contiguous dimension), so "one row per token/option/field".

#include <ggml.h>

#include <cstdint>

namespace clef::head {

/// LayerNorm parameters (weight and bias, [n]).
struct LayerNormTensors {
  ggml_tensor* weight = nullptr;
  ggml_tensor* bias = nullptr;
};

/// Linear parameters: weight ggml [in, out] (torch [out, in]); bias [out] or nullptr.
struct LinearTensors {
  ggml_tensor* weight = nullptr;
  ggml_tensor* bias = nullptr;
};

/// nn.MultiheadAttention parameters: packed in_proj weight ggml [E, 3E] and bias [3E],
/// out_proj [E, E] + bias [E].
struct AttentionTensors {
  ggml_tensor* in_proj_weight = nullptr;
  ggml_tensor* in_proj_bias = nullptr;
  LinearTensors out_proj;
};

/// LN(x) = (x - mean) / sqrt(var + 1e-5) * weight + bias over ne[0], biased variance.
/// x: [n, rows] -> [n, rows].
ggml_tensor* layer_norm(ggml_context* ctx, ggml_tensor* x, const LayerNormTensors& p);

/// (x - mean) / sqrt(var + 1e-5) over ne[0], biased variance: LayerNorm before its weight and
/// bias. x: [n, rows] -> [n, rows].
ggml_tensor* normalize(ggml_context* ctx, ggml_tensor* x);

/// y * weight + bias, LayerNorm p's affine part (layer_norm(x) = affine(normalize(x))).
/// y: [n, rows] -> [n, rows].
ggml_tensor* layer_norm_affine(ggml_context* ctx, ggml_tensor* y, const LayerNormTensors& p);

/// linear(layer_norm_affine(y, norm), p) with the norm folded into the projection:
/// (W diag(weight)) y + (W bias + b), the same values up to rounding. For training: the gradient
/// of the norm's weight and bias then comes from W's gradient product (weight: sum over outputs
/// of W * dW') and the projection's bias, without the product W^T dY over every row of y (y,
/// made from inputs alone, needs no gradient). y: [in, rows] -> [out, rows].
ggml_tensor* folded_linear(ggml_context* ctx, ggml_tensor* y, const LayerNormTensors& norm,
                           const LinearTensors& p);

/// x * W^T (+ b). x: [in, rows] -> [out, rows].
ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, const LinearTensors& p);

/// GELU, exact erf form: 0.5 x (1 + erf(x / sqrt 2)). In the pinned ggml the CPU kernel of
/// ggml_gelu_erf on f32 (ggml-cpu/vec.h, ggml_vec_gelu_erf_f32) calls erff per element: no
/// table and no tanh approximation (those are ggml_gelu's, which is not used here).
ggml_tensor* gelu(ggml_context* ctx, ggml_tensor* x);

/// Linear -> GELU -> Linear (the feed-forward blocks and the residual scorer).
ggml_tensor* feed_forward(ggml_context* ctx, ggml_tensor* x, const LinearTensors& first,
                          const LinearTensors& second);

/// Scaled dot-product attention over heads, the middle of torch 1.13's
/// F.multi_head_attention_forward: per head h of size d = E / n_heads, softmax_S(Q_h K_h^T + mask)
/// V_h, heads concatenated. q: [E, L] (already divided by sqrt(d)), k, v: [E, S]; `mask`: [S, L]
/// of 0 and -inf, or nullptr. Returns [E, L] (before out_proj).
ggml_tensor* attend(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                    std::int64_t n_heads, ggml_tensor* mask);

/// torch nn.MultiheadAttention (batch_first, dropout 0) as in torch 1.13's
/// F.multi_head_attention_forward: Q = x Wq^T + bq, K = m Wk^T + bk, V = m Wv^T + bv;
/// per head h of size d: softmax_S((Q_h / sqrt(d)) K_h^T + mask) V_h; heads concatenated;
/// out_proj. x: [E, L] queries, m: [E, S] keys/values; `sqrt_d`: a [1] tensor holding
/// f32(sqrt(d)); `mask`: [S, L] of 0 and -inf (a batch's records kept apart), or nullptr (none,
/// as the reference). Returns [E, L].
ggml_tensor* multi_head_attention(ggml_context* ctx, ggml_tensor* x, ggml_tensor* m,
                                  const AttentionTensors& p, std::int64_t n_heads,
                                  ggml_tensor* sqrt_d, ggml_tensor* mask = nullptr);

/// F.normalize(v, dim=-1): v / max(||v||_2, 1e-12) per row. v: [n, rows].
ggml_tensor* l2_normalize(ggml_context* ctx, ggml_tensor* v);

/// torch 1.13 F.cosine_similarity(a, b, dim=-1, eps=1e-8) per row, computed as the reference
/// does: sum_k (a_k / sqrt(max(sum a^2, 1e-16))) * (b_k / sqrt(max(sum b^2, 1e-16))).
/// a, b: [n, rows] -> [1, rows].
ggml_tensor* cosine_similarity(ggml_context* ctx, ggml_tensor* a, ggml_tensor* b);

/// exp(min(s, f32(ln 100))) for a [1] log-scale tensor (clamp from above only).
ggml_tensor* clamped_exp_scale(ggml_context* ctx, ggml_tensor* s);

}  // namespace clef::head
