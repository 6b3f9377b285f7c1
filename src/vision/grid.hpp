#pragma once
// Patch grid and image-token counts of one processed image (decision contract sections 3-4).

#include "vision/processor_config.hpp"

namespace clef::vision {

/// The processor's image_grid_thw and what follows from it for the record and M-RoPE.
struct ImageGrid {
  int grid_t = 1;    ///< temporal patches (1 for a still image)
  int grid_h = 0;    ///< patch rows = resized_height / patch_size
  int grid_w = 0;    ///< patch columns = resized_width / patch_size
  int merged_h = 0;  ///< image-token rows H = grid_h / merge_size
  int merged_w = 0;  ///< image-token columns W = grid_w / merge_size
  int n_patches() const noexcept { return grid_t * grid_h * grid_w; }
  /// N = H * W image tokens (<|image_pad|>) in the record.
  int n_image_tokens() const noexcept { return grid_t * merged_h * merged_w; }
  /// How far the text after the image is pulled back: N - max(H, W) (contract section 4).
  int rope_shift_amount() const noexcept;
};

/// The grid of an image already resized to resized_height x resized_width. Throws clef::Error
/// (invalid_request) unless both sides are positive multiples of config.factor().
ImageGrid image_grid(int resized_height, int resized_width, const ProcessorConfig& config = {});

/// smart_resize() then image_grid(): the grid the processor picks for an input image of
/// height x width (what the native arm uses).
ImageGrid image_grid_for_input(int height, int width, const ProcessorConfig& config = {});

}  // namespace clef::vision
