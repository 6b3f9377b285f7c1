#include "vision/tower_memory.hpp"

namespace clef::vision {

std::uint64_t tower_compute_bytes(const ImageGrid& grid, const MmprojInfo& info,
                                  bool flash_attention) noexcept {
  const std::uint64_t p = static_cast<std::uint64_t>(grid.n_patches() > 0 ? grid.n_patches() : 0);
  const std::uint64_t heads = static_cast<std::uint64_t>(info.n_head > 0 ? info.n_head : 16);
  const std::uint64_t width = static_cast<std::uint64_t>(info.n_embd > 0 ? info.n_embd : 1152);
  const std::uint64_t scores = flash_attention ? heads * p * 256 : heads * p * p;
  return 4 * (scores + 32 * width * p);
}

}  // namespace clef::vision
