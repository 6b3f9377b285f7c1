#pragma once
// How much compute memory the vision tower's graph needs for one image, known from the image's
// grid before anything is decoded or run, so a request whose tower work cannot fit the memory the
// server allows is refused (413) instead of crashing the process inside ggml's allocator.

#include <cstdint>

#include "vision/grid.hpp"
#include "vision/mmproj_info.hpp"

namespace clef::vision {

/// Estimated bytes of the tower's compute buffer for one image of `grid` (P = grid.n_patches()):
///   without flash attention, ggml holds the attention scores of all heads at once:
///     n_head * P * P f32 (the term that made a 4000x4000 image ask for 31.4 GB on a 2-head
///     tower: 2 * 62,500^2 * 4 bytes = 31.25 GB);
///   with flash attention the scores are computed in tiles: n_head * P * 256 f32;
///   plus 32 f32 rows of the tower's width per patch for the other activations (generous).
/// An mmproj without head count or width counts as 16 heads of 1,152 (the published tower).
std::uint64_t tower_compute_bytes(const ImageGrid& grid, const MmprojInfo& info,
                                  bool flash_attention) noexcept;

}  // namespace clef::vision
