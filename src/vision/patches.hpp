#pragma once
// The processor's pixel_values tensor for one image.

#include <vector>

#include "media/image.hpp"
#include "vision/grid.hpp"
#include "vision/processor_config.hpp"

namespace clef::vision {

/// pixel_values of one image: float32 [rows, cols] row-major, rows = grid_t * grid_h * grid_w,
/// cols = 3 * temporal_patch_size * patch_size^2 (1536 by default).
struct PatchTensor {
  int rows = 0;
  int cols = 0;
  std::vector<float> data;
};

/// Normalized value of an 8-bit sample: (x / 255 - 0.5) / 0.5 computed in double, then rounded
/// to float32 (mean = std = 0.5, rescale 1/255).
float normalize_sample(int x) noexcept;

/// Patchifies an image whose sides are multiples of config.factor() (no resizing here), in the
/// reference's order (Qwen2VLImageProcessor._preprocess: view(t, T, C, H/m, m, p, W/m, m, p)
/// permuted to (t, H/m, W/m, m, m, C, T, p, p)): rows go merge block by merge block (row-major
/// over blocks), and inside a block its merge_size x merge_size patches row-major; each row is
/// channel (R, G, B), then the temporal copies (the still frame repeated), then the patch's
/// pixels row-major. Throws clef::Error (invalid_request) for sides that are not multiples.
PatchTensor make_patches(const media::RgbImage& image, const ProcessorConfig& config = {});

}  // namespace clef::vision
