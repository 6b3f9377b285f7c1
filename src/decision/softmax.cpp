#include "decision/softmax.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

namespace clef::decision {
namespace {

// torch's AVX2 Vectorized<float> width (vec::reduce_all lanes).
constexpr std::size_t kLanes = 8;

// 2^q as a float for q in the normal range (SLEEF vpow2i_vf_vi2).
float pow2i(int q) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(q + 0x7f) << 23);
}

// torch 1.13 vec::reduce_all(+) over e with 8-lane Vectorized<float>.
float reduce_sum(const std::vector<float>& e) {
  if (e.size() < kLanes) {
    float s = e[0];
    for (std::size_t i = 1; i < e.size(); ++i) s += e[i];
    return s;
  }
  std::array<float, kLanes> acc{};
  std::copy_n(e.begin(), kLanes, acc.begin());
  std::size_t d = kLanes;
  for (; d < e.size() - e.size() % kLanes; d += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] += e[d + j];
  }
  for (std::size_t j = 0; d + j < e.size(); ++j) acc[j] += e[d + j];  // the partial last vector
  for (std::size_t width = kLanes / 2; width >= 1; width /= 2) {      // vec_reduce_all
    for (std::size_t j = 0; j < width; ++j) acc[j] = acc[j] + acc[j + width];
  }
  return acc[0];
}

}  // namespace

// SLEEF 3.x src/libm/sleefsimdsp.c xexpf, one lane.
float expf_sleef_u10(float d) {
  constexpr float kRLn2 = 1.442695040888963407359924681001892137426645954152985934135449406931f;
  constexpr float kL2U = 0.693145751953125f;
  constexpr float kL2L = 1.428606765330187045e-06f;
  const int q = static_cast<int>(std::rint(d * kRLn2));
  float s = std::fma(static_cast<float>(q), -kL2U, d);
  s = std::fma(static_cast<float>(q), -kL2L, s);
  float u = 0.000198527617612853646278381f;
  u = std::fma(u, s, 0.00139304355252534151077271f);
  u = std::fma(u, s, 0.00833336077630519866943359f);
  u = std::fma(u, s, 0.0416664853692054748535156f);
  u = std::fma(u, s, 0.166666671633720397949219f);
  u = std::fma(u, s, 0.5f);
  const float s2 = s * s;
  u = 1.0f + std::fma(s2, u, s);
  u = u * pow2i(q >> 1) * pow2i(q - (q >> 1));  // vldexp2_vf_vf_vi2
  if (d < -104.0f) u = 0.0f;
  if (d > 100.0f) u = INFINITY;
  return u;
}

std::vector<float> softmax_f32(std::span<const float> logits) {
  std::vector<float> e(logits.size());
  if (logits.empty()) return e;
  const float m = *std::max_element(logits.begin(), logits.end());
  for (std::size_t i = 0; i < logits.size(); ++i) e[i] = expf_sleef_u10(logits[i] - m);
  const float inv = 1.0f / reduce_sum(e);
  for (float& x : e) x *= inv;
  return e;
}

}  // namespace clef::decision
