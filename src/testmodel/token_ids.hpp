#pragma once
// Deterministic pseudo-random token ids for tests and benchmarks of the backbone.

#include <cstdint>
#include <vector>

namespace clef::testmodel {

/// `n` token ids in [0, n_vocab) from a plain 32-bit LCG (x = x * 1664525 + 1013904223, id =
/// (x >> 8) % n_vocab) started at `seed`: the same arguments give the same ids on every platform.
/// Any ids will do for the backbone.
std::vector<std::int32_t> random_token_ids(int n, int n_vocab, std::uint32_t seed);

}  // namespace clef::testmodel
