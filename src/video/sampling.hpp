#pragma once
// Which frames of a video the reference processor keeps, and the timestamp of each temporal
// patch (transformers 5.x, models/qwen3_vl: Qwen3VLVideoProcessor.sample_frames and
// Qwen3VLProcessor._calculate_timestamps; decision contract section 8).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace clef::video {

/// The frame-sampling settings of one video: the video processor's defaults, overridden by the
/// request's media_kwargs.
struct SamplingParams {
  bool do_sample_frames = true;   ///< false: every frame is kept
  std::optional<double> fps;      ///< target frames per second (default 2 when num_frames unset)
  std::optional<int> num_frames;  ///< exact number of frames; excludes fps
  int min_frames = 4;             ///< least frames kept when sampling by fps
  int max_frames = 768;           ///< most frames kept
};

/// The reference's sample_frames: for a video of `total_frames` frames at `video_fps`:
///   fps and num_frames both given: refused (400 naming media_kwargs);
///   num_frames unset: num_frames = min(max(int(total / video_fps * fps), min_frames),
///                                      max_frames, total)   (fps defaulting to 2);
///   indices = numpy.linspace(0, total - 1, num_frames).round().astype(int), i.e.
///     i * ((total - 1) / (num_frames - 1)) rounded half to even, the last exactly total - 1.
/// With do_sample_frames false: 0..total-1. Throws clef::Error (400, `param`) for total_frames
/// < 1, video_fps <= 0 when sampling by fps, or num_frames < 1.
std::vector<std::int64_t> sample_frame_indices(std::int64_t total_frames, double video_fps,
                                               const SamplingParams& params,
                                               const std::string& param = {});

/// The reference's _calculate_timestamps: the sampled indices padded with the last one to a
/// multiple of `temporal_patch_size`, each index / video_fps seconds, then each group of
/// temporal_patch_size frames gives (first + last) / 2. One value per temporal patch.
std::vector<double> patch_timestamps(const std::vector<std::int64_t>& indices, double video_fps,
                                     int temporal_patch_size);

/// The text written before a temporal patch's vision block: "<" + the seconds formatted like
/// Python's f"{t:.1f}" + " seconds>", e.g. "<0.3 seconds>".
std::string timestamp_text(double seconds);

}  // namespace clef::video
