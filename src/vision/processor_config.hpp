#pragma once
// The reference image processor's settings (Qwen2VLImageProcessor as configured by the
// checkpoint's processor_config.json: patch 16, temporal patch 2, merge 2, mean = std = 0.5,
// size {shortest_edge: 65536, longest_edge: 16777216}).

#include <cstdint>

namespace clef::vision {

struct ProcessorConfig {
  int patch_size = 16;                   ///< spatial patch side, pixels
  int temporal_patch_size = 2;           ///< frames per patch; a still image is repeated to fill it
  int merge_size = 2;                    ///< merge_size x merge_size patches become one image token
  std::int64_t min_pixels = 65'536;      ///< size.shortest_edge: smallest resized area
  std::int64_t max_pixels = 16'777'216;  ///< size.longest_edge: largest resized area

  /// patch_size * merge_size: resized sides are multiples of it (32 by default).
  int factor() const noexcept { return patch_size * merge_size; }
};

}  // namespace clef::vision
