// libFuzzer target: the reference processor's path for one decoded image - smart_resize (also
// on arbitrary sides and pixel budgets), the antialiased bicubic resize and patchifying. The
// image's size and pixels come from the input. Any input must be processed or refused with
// clef::Error; a processed image has sides that are multiples of the factor within the pixel
// budget, its grid matches those sides, and its patch tensor holds one row per patch.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "util/error.hpp"
#include "vision/processor.hpp"
#include "vision/smart_resize.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 12) return 0;
  const auto u32 = [&](std::size_t at) {
    return static_cast<std::uint32_t>(data[at]) | static_cast<std::uint32_t>(data[at + 1]) << 8 |
           static_cast<std::uint32_t>(data[at + 2]) << 16 |
           static_cast<std::uint32_t>(data[at + 3]) << 24;
  };
  // smart_resize alone on any sides and budgets.
  try {
    const auto r = clef::vision::smart_resize(static_cast<int>(u32(0)), static_cast<int>(u32(4)),
                                              32, 1 + (u32(8) % (1 << 20)), 1 << 22);
    if (r.height <= 0 || r.width <= 0 || r.height % 32 != 0 || r.width % 32 != 0) std::abort();
  } catch (const clef::Error&) {
  }
  // A small image (sides 1..96) whose pixels repeat the input, through the whole processor with
  // a pixel budget kept small so one execution stays fast.
  clef::vision::ProcessorConfig config;
  config.min_pixels = 1024;
  config.max_pixels = 1 << 16;
  const int height = 1 + static_cast<int>(data[0] % 96);
  const int width = 1 + static_cast<int>(data[1] % 96);
  clef::media::RgbImage image(width, height);
  const std::size_t n = size - 12;
  for (std::size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = n ? data[12 + i % n] : 0;
  try {
    const clef::vision::ProcessedImage p = clef::vision::preprocess_image(image, config);
    if (p.resized_height % config.factor() != 0 || p.resized_width % config.factor() != 0) {
      std::abort();
    }
    if (static_cast<std::int64_t>(p.resized_height) * p.resized_width > config.max_pixels) {
      std::abort();
    }
    if (p.grid.grid_h * config.patch_size != p.resized_height ||
        p.grid.grid_w * config.patch_size != p.resized_width) {
      std::abort();
    }
    if (p.pixel_values.rows != p.grid.n_patches() ||
        p.pixel_values.data.size() !=
            static_cast<std::size_t>(p.pixel_values.rows) * p.pixel_values.cols) {
      std::abort();
    }
  } catch (const clef::Error&) {
  }
  return 0;
}
