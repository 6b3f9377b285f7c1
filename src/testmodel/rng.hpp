#pragma once
// Seeded random numbers for test models. The integer stream is fully specified (SplitMix64,
// xoshiro256**); normals use our own Box-Muller, so the same seed gives the same numbers wherever
// libm's log/sin/cos agree (std::normal_distribution is avoided: its algorithm is
// implementation-defined).

#include <cstdint>
#include <string_view>

namespace clef::testmodel {

/// SplitMix64 step (Steele, Lea, Flood 2014): advances `state` and returns the next output.
std::uint64_t splitmix64(std::uint64_t& state);

/// A seed for one named stream (e.g. one tensor): FNV-1a 64 of `label`, mixed with `seed`
/// through SplitMix64. Streams of different labels are independent of generation order.
std::uint64_t derive_seed(std::uint64_t seed, std::string_view label);

/// xoshiro256** (Blackman, Vigna 2018) seeded with SplitMix64, plus uniform and normal draws.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);

  std::uint64_t next_u64();
  /// Uniform double in [0, 1), 53 random bits.
  double uniform();
  /// Uniform double in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Standard normal N(0, 1) by the Box-Muller transform; draws come in pairs, the second one
  /// is returned by the next call.
  double normal();

 private:
  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace clef::testmodel
