#include "vision/grid.hpp"

#include <algorithm>
#include <string>

#include "util/error.hpp"
#include "vision/smart_resize.hpp"

namespace clef::vision {

int ImageGrid::rope_shift_amount() const noexcept {
  return n_image_tokens() - std::max(merged_h, merged_w);
}

ImageGrid image_grid(int resized_height, int resized_width, const ProcessorConfig& config) {
  const int f = config.factor();
  if (resized_height <= 0 || resized_width <= 0 || resized_height % f != 0 ||
      resized_width % f != 0) {
    throw invalid_request("resized image " + std::to_string(resized_height) + "x" +
                          std::to_string(resized_width) + " is not a positive multiple of " +
                          std::to_string(f));
  }
  ImageGrid g;
  g.grid_t = 1;
  g.grid_h = resized_height / config.patch_size;
  g.grid_w = resized_width / config.patch_size;
  g.merged_h = g.grid_h / config.merge_size;
  g.merged_w = g.grid_w / config.merge_size;
  return g;
}

ImageGrid image_grid_for_input(int height, int width, const ProcessorConfig& config) {
  const ResizedSize r =
      smart_resize(height, width, config.factor(), config.min_pixels, config.max_pixels);
  return image_grid(r.height, r.width, config);
}

}  // namespace clef::vision
