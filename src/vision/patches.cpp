#include "vision/patches.hpp"

#include <array>

namespace clef::vision {

float normalize_sample(int x) noexcept {
  return static_cast<float>((static_cast<double>(x) / 255.0 - 0.5) / 0.5);
}

PatchTensor make_patches(const media::RgbImage& image, const ProcessorConfig& config) {
  const ImageGrid g = image_grid(image.height, image.width, config);
  std::array<float, 256> lut{};
  for (int v = 0; v < 256; ++v) lut[v] = normalize_sample(v);

  const int p = config.patch_size;
  const int m = config.merge_size;
  const int T = config.temporal_patch_size;
  const int plane = p * p;
  PatchTensor out;
  out.rows = g.n_patches();
  out.cols = 3 * T * plane;
  out.data.resize(static_cast<std::size_t>(out.rows) * out.cols);
  const int blocks_w = g.grid_w / m;
  std::size_t row = 0;
  for (int bh = 0; bh < g.grid_h / m; ++bh) {
    for (int bw = 0; bw < blocks_w; ++bw) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw, ++row) {
          float* dst = &out.data[row * out.cols];
          const int y0 = (bh * m + mh) * p;
          const int x0 = (bw * m + mw) * p;
          for (int c = 0; c < 3; ++c) {
            float* first = dst + static_cast<std::size_t>(c) * T * plane;
            for (int py = 0; py < p; ++py) {
              const std::uint8_t* src = image.pixel(x0, y0 + py) + c;
              for (int px = 0; px < p; ++px) first[py * p + px] = lut[src[px * 3]];
            }
            for (int t = 1; t < T; ++t) {
              std::copy(first, first + plane, first + static_cast<std::size_t>(t) * plane);
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace clef::vision
