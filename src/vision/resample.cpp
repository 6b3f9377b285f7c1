#include "vision/resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace clef::vision {
namespace {

/// Keys' cubic with a = -0.5 as Pillow writes it (Resample.c bicubic_filter).
double cubic_pillow(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

/// The same cubic as torch writes it (UpSample.h cubic_convolution1/2 with A = -0.5).
double cubic_torch(double x) {
  constexpr double A = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2.0) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0.0;
}

/// Fixed-point taps of one axis: output i reads input [start[i], start[i] + count[i]) with
/// weights[i * taps + j], scaled by 2^precision.
struct AxisTaps {
  int taps = 0;
  int precision = 0;
  std::vector<int> start;
  std::vector<int> count;
  std::vector<std::int32_t> weights;
};

std::int32_t to_fixed(double w, int precision) {
  const double v = w * static_cast<double>(1 << precision);
  return static_cast<std::int32_t>(v < 0 ? -0.5 + v : 0.5 + v);  // truncation toward zero
}

AxisTaps make_taps(int in_size, int out_size, ResampleKind kind) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 2.0 * filter_scale;  // bicubic support 2, widened when downsampling
  const double inv = 1.0 / filter_scale;
  AxisTaps t;
  t.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.start.resize(out_size);
  t.count.resize(out_size);
  std::vector<double> w(static_cast<std::size_t>(out_size) * t.taps, 0.0);
  double w_max = 0.0;
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = std::clamp(hi - lo, 0, t.taps);
    double* k = &w[static_cast<std::size_t>(i) * t.taps];
    double total = 0.0;
    for (int j = 0; j < n; ++j) {
      const double x = (j + lo - center + 0.5) * inv;
      k[j] = kind == ResampleKind::pillow_bicubic ? cubic_pillow(x) : cubic_torch(x);
      total += k[j];
    }
    if (total != 0.0) {
      for (int j = 0; j < n; ++j) {
        k[j] /= total;
        w_max = std::max(w_max, k[j]);
      }
    }
    t.start[i] = lo;
    t.count[i] = n;
  }
  if (kind == ResampleKind::pillow_bicubic) {
    t.precision = 22;  // Resample.c PRECISION_BITS = 32 - 8 - 2
  } else {
    // UpSampleKernel.cpp _compute_index_ranges_int16_weights: the largest precision below 22
    // at which the largest weight, doubled, still rounds below 2^15.
    int p = 0;
    for (; p < 22; ++p) {
      if (static_cast<int>(0.5 + w_max * static_cast<double>(1 << (p + 1))) >= (1 << 15)) break;
    }
    t.precision = p;
  }
  t.weights.resize(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) t.weights[i] = to_fixed(w[i], t.precision);
  return t;
}

std::uint8_t round_fixed(std::int64_t acc, int precision) {
  return static_cast<std::uint8_t>(std::clamp<std::int64_t>(acc >> precision, 0, 255));
}

media::RgbImage resample_horizontal(const media::RgbImage& in, int out_width, ResampleKind kind) {
  const AxisTaps t = make_taps(in.width, out_width, kind);
  const std::int64_t half = std::int64_t{1} << (t.precision - 1);
  media::RgbImage out(out_width, in.height);
  for (int y = 0; y < in.height; ++y) {
    const std::uint8_t* row = in.pixel(0, y);
    std::uint8_t* o = out.pixel(0, y);
    for (int x = 0; x < out_width; ++x, o += 3) {
      const std::int32_t* k = &t.weights[static_cast<std::size_t>(x) * t.taps];
      const std::uint8_t* src = row + static_cast<std::size_t>(t.start[x]) * 3;
      std::int64_t r = half, g = half, b = half;
      for (int j = 0; j < t.count[x]; ++j, src += 3) {
        r += src[0] * std::int64_t{k[j]};
        g += src[1] * std::int64_t{k[j]};
        b += src[2] * std::int64_t{k[j]};
      }
      o[0] = round_fixed(r, t.precision);
      o[1] = round_fixed(g, t.precision);
      o[2] = round_fixed(b, t.precision);
    }
  }
  return out;
}

media::RgbImage resample_vertical(const media::RgbImage& in, int out_height, ResampleKind kind) {
  const AxisTaps t = make_taps(in.height, out_height, kind);
  const std::int64_t half = std::int64_t{1} << (t.precision - 1);
  const std::size_t stride = static_cast<std::size_t>(in.width) * 3;
  media::RgbImage out(in.width, out_height);
  std::vector<std::int64_t> acc(stride);
  for (int y = 0; y < out_height; ++y) {
    std::fill(acc.begin(), acc.end(), half);
    const std::int32_t* k = &t.weights[static_cast<std::size_t>(y) * t.taps];
    for (int j = 0; j < t.count[y]; ++j) {
      const std::uint8_t* src = in.pixel(0, t.start[y] + j);
      const std::int64_t w = k[j];
      for (std::size_t i = 0; i < stride; ++i) acc[i] += src[i] * w;
    }
    std::uint8_t* o = out.pixel(0, y);
    for (std::size_t i = 0; i < stride; ++i) o[i] = round_fixed(acc[i], t.precision);
  }
  return out;
}

}  // namespace

media::RgbImage resize_bicubic(const media::RgbImage& image, int out_width, int out_height,
                               ResampleKind kind) {
  if (out_width <= 0 || out_height <= 0) {
    throw invalid_request("resize target " + std::to_string(out_width) + "x" +
                          std::to_string(out_height) + " is not positive");
  }
  if (image.width <= 0 || image.height <= 0) throw invalid_request("cannot resize an empty image");
  // Horizontal pass first, then vertical; a pass whose size does not change is skipped
  // (Pillow: need_horizontal / need_vertical; torch: separable kernel per changed dimension).
  if (out_width == image.width && out_height == image.height) return image;
  if (out_width == image.width) return resample_vertical(image, out_height, kind);
  media::RgbImage h = resample_horizontal(image, out_width, kind);
  if (out_height == image.height) return h;
  return resample_vertical(h, out_height, kind);
}

}  // namespace clef::vision
