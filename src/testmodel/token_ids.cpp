#include "testmodel/token_ids.hpp"

namespace clef::testmodel {

std::vector<std::int32_t> random_token_ids(int n, int n_vocab, std::uint32_t seed) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  std::uint32_t x = seed;
  for (auto& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = static_cast<std::int32_t>((x >> 8) % static_cast<std::uint32_t>(n_vocab));
  }
  return ids;
}

}  // namespace clef::testmodel
