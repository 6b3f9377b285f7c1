#pragma once
// float32 -> bfloat16 rounding used for BF16 safetensors (tests/data/oracle/head/README.md,
// "safetensors files"): round to nearest, ties to even, on the f32 bit pattern.

#include <bit>
#include <cstdint>

namespace clef::head {

/// BF16 bits of `x`, rounded to nearest even: `(u + 0x7FFF + ((u >> 16) & 1)) >> 16` computed in
/// 64 bits; a NaN keeps its top bits and gets the quiet bit (`(u >> 16) | 0x40`).
inline std::uint16_t float_to_bf16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0) {
    return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  }
  const std::uint64_t rounded = static_cast<std::uint64_t>(u) + 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

/// The f32 value of BF16 bits (exact).
inline float bf16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace clef::head
