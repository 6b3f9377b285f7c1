#pragma once
// The reference's video processor for one video (transformers 5.x, models/qwen3_vl/
// video_processing_qwen3_vl.py, Qwen3VLVideoProcessor; Qwen3.5 uses it too): which frames, at
// what size, how many temporal patches, their timestamps and their pixel tensor
// (decision contract section 8).

#include <cstdint>
#include <string>
#include <vector>

#include "media/image.hpp"
#include "video/sampling.hpp"
#include "vision/grid.hpp"
#include "vision/patches.hpp"
#include "vision/processor_config.hpp"
#include "vision/smart_resize.hpp"

namespace clef::video {

/// The video processor's settings: the class defaults (the checkpoint ships no
/// video_preprocessor_config.json), with a request's media_kwargs applied.
struct VideoProcessorConfig {
  int patch_size = 16;
  int temporal_patch_size = 2;
  int merge_size = 2;
  /// size.shortest_edge: the least resized pixels of the whole video, frames x height x width.
  std::int64_t min_pixels = 128 * 32 * 32;
  /// size.longest_edge: the most resized pixels of the whole video (frames x height x width).
  std::int64_t max_pixels = 32 * 32 * 768;
  SamplingParams sampling;

  int factor() const noexcept { return patch_size * merge_size; }
  /// The image-side view (patch, temporal patch, merge) for grids and patch tensors.
  vision::ProcessorConfig spatial() const;
};

/// The video smart_resize (video_processing_qwen3_vl.py smart_resize), in double as Python:
///   refuse num_frames < temporal_factor ("t:{n} must be larger than temporal_factor:{tf}");
///   when height or width < factor: scale both by max(factor / h, factor / w), truncated (int());
///   refuse an aspect ratio above 200;
///   h_bar = round(h / factor) * factor, w_bar likewise, t_bar = round(T / tf) * tf (half even);
///   if t_bar * h_bar * w_bar > max_pixels: beta = sqrt(T * h * w / max_pixels),
///       h_bar = max(factor, floor(h / beta / factor) * factor), w_bar likewise;
///   elif below min_pixels: beta = sqrt(min_pixels / (T * h * w)),
///       h_bar = ceil(h * beta / factor) * factor, w_bar likewise.
/// Throws clef::Error (400 invalid_video naming `param`).
vision::ResizedSize video_smart_resize(int num_frames, int height, int width, int temporal_factor,
                                       int factor, std::int64_t min_pixels, std::int64_t max_pixels,
                                       const std::string& param = {});

/// What the processor makes of one video, known before any frame is decoded.
struct VideoPlan {
  std::vector<std::int64_t> indices;  ///< sampled frame indices (sample_frame_indices)
  double fps = 0;                     ///< the frame rate timestamps are computed with
  int resized_height = 0;
  int resized_width = 0;
  int groups = 0;                  ///< grid_t: temporal patches (frames padded to a multiple of 2)
  vision::ImageGrid grid;          ///< one temporal patch's grid (grid_t = 1)
  std::vector<double> timestamps;  ///< one per temporal patch (patch_timestamps)
  /// <|video_pad|> tokens of one temporal patch: grid_h * grid_w / merge_size^2.
  int tokens_per_group() const noexcept { return grid.n_image_tokens(); }
};

/// Plans a video of `total_frames` frames of height x width at `video_fps`: samples the frames,
/// resizes with video_smart_resize(len(indices), ...), groups them in temporal patches and dates
/// each. Throws clef::Error (400 naming `param`) as the steps do.
VideoPlan plan_video(std::int64_t total_frames, double video_fps, int height, int width,
                     const VideoProcessorConfig& config, const std::string& param = {});

/// One decoded frame at the plan's size: the image path's torch antialiased bicubic on 8-bit RGB,
/// skipped when the frame already has that size.
media::RgbImage resize_frame(const media::RgbImage& frame, const VideoPlan& plan);

/// The sampled frames resized to the plan's size (resize_frame) and padded to a multiple of
/// temporal_patch_size by repeating the last frame: 2 * plan.groups frames.
std::vector<media::RgbImage> processed_frames(const std::vector<media::RgbImage>& sampled,
                                              const VideoPlan& plan,
                                              const VideoProcessorConfig& config);

/// pixel_values_videos of processed frames (processed_frames): float32
/// [groups * grid_h * grid_w, 3 * temporal_patch_size * patch_size^2], rows in the reference's
/// order (view(gt, tp, C, gh/m, m, p, gw/m, m, p) permuted to (gt, gh/m, gw/m, m, m, C, tp, p, p)),
/// values normalize_sample. Throws clef::Error (internal) for a frame count that is not a
/// multiple of temporal_patch_size or frames of different sizes.
vision::PatchTensor make_video_patches(const std::vector<media::RgbImage>& frames,
                                       const VideoProcessorConfig& config);

}  // namespace clef::video
