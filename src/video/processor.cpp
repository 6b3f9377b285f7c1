#include "video/processor.hpp"

#include <cfenv>
#include <cmath>
#include <limits>

#include "media/errors.hpp"
#include "vision/processor.hpp"
#include "vision/resample.hpp"

namespace clef::video {
namespace {

// Python's round(): half to even.
double round_half_even(double x) {
  const int saved = std::fegetround();
  std::fesetround(FE_TONEAREST);
  const double r = std::nearbyint(x);
  std::fesetround(saved);
  return r;
}

int to_side(double v, const std::string& param) {
  if (!(v >= 1) || v > std::numeric_limits<int>::max()) {
    throw media::kVideoMedia.invalid("the video's resized size does not fit", param);
  }
  return static_cast<int>(v);
}

}  // namespace

vision::ProcessorConfig VideoProcessorConfig::spatial() const {
  vision::ProcessorConfig c;
  c.patch_size = patch_size;
  c.temporal_patch_size = temporal_patch_size;
  c.merge_size = merge_size;
  c.min_pixels = min_pixels;
  c.max_pixels = max_pixels;
  return c;
}

vision::ResizedSize video_smart_resize(int num_frames, int height, int width, int temporal_factor,
                                       int factor, std::int64_t min_pixels, std::int64_t max_pixels,
                                       const std::string& param) {
  if (num_frames < temporal_factor) {
    throw media::kVideoMedia.invalid(
        "the video gives " + std::to_string(num_frames) +
            " frame(s); the processor needs at least " + std::to_string(temporal_factor) +
            " (t:" + std::to_string(num_frames) +
            " must be larger than temporal_factor:" + std::to_string(temporal_factor) + ")",
        param);
  }
  if (height <= 0 || width <= 0)
    throw media::kVideoMedia.invalid("the video has an empty frame size", param);
  double h = height;
  double w = width;
  const double f = factor;
  if (height < factor || width < factor) {
    const double scale = std::max(f / h, f / w);
    h = std::trunc(h * scale);
    w = std::trunc(w * scale);
  }
  const double ratio = std::max(h, w) / std::min(h, w);
  if (ratio > 200) {
    throw media::kVideoMedia.invalid(
        "absolute aspect ratio must be smaller than 200, got " + std::to_string(ratio), param);
  }
  const double t = num_frames;
  double h_bar = round_half_even(h / f) * f;
  double w_bar = round_half_even(w / f) * f;
  const double t_bar = round_half_even(t / temporal_factor) * temporal_factor;
  // Python ints: the products are exact below 2^53, far above any accepted video.
  const double pixels = t_bar * h_bar * w_bar;
  if (pixels > static_cast<double>(max_pixels)) {
    const double beta = std::sqrt((t * h * w) / static_cast<double>(max_pixels));
    h_bar = std::max(f, std::floor(h / beta / f) * f);
    w_bar = std::max(f, std::floor(w / beta / f) * f);
  } else if (pixels < static_cast<double>(min_pixels)) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (t * h * w));
    h_bar = std::ceil(h * beta / f) * f;
    w_bar = std::ceil(w * beta / f) * f;
  }
  return {to_side(h_bar, param), to_side(w_bar, param)};
}

VideoPlan plan_video(std::int64_t total_frames, double video_fps, int height, int width,
                     const VideoProcessorConfig& config, const std::string& param) {
  VideoPlan plan;
  plan.indices = sample_frame_indices(total_frames, video_fps, config.sampling, param);
  plan.fps = video_fps;
  const auto n = static_cast<int>(plan.indices.size());
  const vision::ResizedSize size =
      video_smart_resize(n, height, width, config.temporal_patch_size, config.factor(),
                         config.min_pixels, config.max_pixels, param);
  plan.resized_height = size.height;
  plan.resized_width = size.width;
  plan.groups = (n + config.temporal_patch_size - 1) / config.temporal_patch_size;
  plan.grid = vision::image_grid(size.height, size.width, config.spatial());
  plan.timestamps = patch_timestamps(plan.indices, video_fps, config.temporal_patch_size);
  return plan;
}

media::RgbImage resize_frame(const media::RgbImage& frame, const VideoPlan& plan) {
  if (frame.width == plan.resized_width && frame.height == plan.resized_height) return frame;
  return vision::resize_bicubic(frame, plan.resized_width, plan.resized_height,
                                vision::ResampleKind::torch_bicubic_aa);
}

std::vector<media::RgbImage> processed_frames(const std::vector<media::RgbImage>& sampled,
                                              const VideoPlan& plan,
                                              const VideoProcessorConfig& config) {
  std::vector<media::RgbImage> out;
  out.reserve(static_cast<std::size_t>(plan.groups * config.temporal_patch_size));
  for (const media::RgbImage& frame : sampled) out.push_back(resize_frame(frame, plan));
  while (!out.empty() && out.size() % static_cast<std::size_t>(config.temporal_patch_size) != 0) {
    out.push_back(out.back());
  }
  return out;
}

vision::PatchTensor make_video_patches(const std::vector<media::RgbImage>& frames,
                                       const VideoProcessorConfig& config) {
  const int tp = config.temporal_patch_size;
  const int p = config.patch_size;
  const int m = config.merge_size;
  if (frames.empty() || frames.size() % static_cast<std::size_t>(tp) != 0) {
    throw Error(ErrorKind::internal, "internal", "make_video_patches: frames not a multiple of tp");
  }
  const int height = frames[0].height;
  const int width = frames[0].width;
  for (const auto& f : frames) {
    if (f.width != width || f.height != height) {
      throw Error(ErrorKind::internal, "internal", "make_video_patches: frame sizes differ");
    }
  }
  const vision::ImageGrid grid = vision::image_grid(height, width, config.spatial());
  const int gt = static_cast<int>(frames.size()) / tp;
  vision::PatchTensor out;
  out.rows = gt * grid.grid_h * grid.grid_w;
  out.cols = 3 * tp * p * p;
  out.data.resize(static_cast<std::size_t>(out.rows) * static_cast<std::size_t>(out.cols));
  std::size_t k = 0;
  for (int t = 0; t < gt; ++t)
    for (int bh = 0; bh < grid.grid_h / m; ++bh)
      for (int bw = 0; bw < grid.grid_w / m; ++bw)
        for (int mh = 0; mh < m; ++mh)
          for (int mw = 0; mw < m; ++mw)
            for (int c = 0; c < 3; ++c)
              for (int s = 0; s < tp; ++s) {
                const media::RgbImage& f = frames[static_cast<std::size_t>(t * tp + s)];
                for (int py = 0; py < p; ++py)
                  for (int px = 0; px < p; ++px) {
                    const int y = (bh * m + mh) * p + py;
                    const int x = (bw * m + mw) * p + px;
                    out.data[k++] = vision::normalize_sample(f.pixel(x, y)[c]);
                  }
              }
  return out;
}

}  // namespace clef::video
