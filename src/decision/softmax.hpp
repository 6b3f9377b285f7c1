#pragma once
// The per-question softmax of the answer builder (decision contract, section 6).

#include <span>
#include <vector>

namespace clef::decision {

/// Float32 softmax over one question's option logits, reproducing torch's CPU
/// `logits.float().softmax(-1)` of the reference's systemone (torch 1.13,
/// aten/src/ATen/native/cpu/SoftMaxKernel.cpp `_vec_softmax_lastdim`, AVX2 Vectorized<float>):
///   m = max(x); e_i = expf_sleef_u10(x_i - m); s = sum of e_i as vec::reduce_all does it
///   (fewer than 8 values: in order; else 8 lane sums, then a halving tree over the lanes);
///   p_i = e_i * (1 / s).
/// This reproduces the head oracle's probs_f32 bit for bit. Empty input gives an empty result.
std::vector<float> softmax_f32(std::span<const float> logits);

/// SLEEF's xexpf (the u10 float exp, 1.0 ULP, used by torch's Vectorized<float>::exp), in scalar
/// form with fused multiply-adds: the reference's float exp, bit for bit.
float expf_sleef_u10(float d);

}  // namespace clef::decision
