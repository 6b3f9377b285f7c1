#include "video/sampling.hpp"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdio>

#include "media/errors.hpp"
#include "util/error.hpp"

namespace clef::video {

std::vector<std::int64_t> sample_frame_indices(std::int64_t total_frames, double video_fps,
                                               const SamplingParams& params,
                                               const std::string& param) {
  if (total_frames < 1) throw media::kVideoMedia.invalid("the video has no frames", param);
  std::vector<std::int64_t> out;
  if (!params.do_sample_frames) {
    out.resize(static_cast<std::size_t>(total_frames));
    for (std::int64_t i = 0; i < total_frames; ++i) out[static_cast<std::size_t>(i)] = i;
    return out;
  }
  if (params.fps && params.num_frames) {
    throw invalid_request("media_kwargs: fps and num_frames exclude each other; give one",
                          "media_kwargs");
  }
  std::int64_t n = 0;
  if (params.num_frames) {
    n = *params.num_frames;
  } else {
    const double fps = params.fps.value_or(2.0);
    if (!(video_fps > 0)) {
      throw invalid_request("the video's frame rate is unknown; sampling by fps needs it", param);
    }
    // Python: int(total_num_frames / metadata.fps * fps) truncates toward zero, and raises
    // OverflowError for an infinite quotient (a tiny frame rate, a huge fps).
    const double wanted = static_cast<double>(total_frames) / video_fps * fps;
    if (!std::isfinite(wanted)) {
      throw invalid_request("the frame count to sample, " + std::to_string(total_frames) + " / " +
                                std::to_string(video_fps) + " fps x " + std::to_string(fps) +
                                " fps, is not finite; the reference processor fails on it",
                            params.fps ? "media_kwargs.fps" : param);
    }
    // Above total_frames the count is clamped to it anyway.
    n = wanted >= static_cast<double>(total_frames) ? total_frames
                                                    : static_cast<std::int64_t>(std::trunc(wanted));
    n = std::min({std::max<std::int64_t>(n, params.min_frames),
                  static_cast<std::int64_t>(params.max_frames), total_frames});
  }
  if (n < 1) throw invalid_request("media_kwargs: num_frames must be at least 1", "media_kwargs");
  out.resize(static_cast<std::size_t>(n));
  // numpy.linspace(0, stop, n): y = arange(n) * (stop / (n - 1)) (or, when that step is 0,
  // arange(n) / (n - 1) * stop), the last set to stop; then round half to even, astype(int).
  const double stop = static_cast<double>(total_frames - 1);
  const int saved = std::fegetround();
  std::fesetround(FE_TONEAREST);
  if (n == 1) {
    out[0] = 0;
  } else {
    const double div = static_cast<double>(n - 1);
    const double step = stop / div;
    for (std::int64_t i = 0; i < n; ++i) {
      const double y =
          step == 0 ? static_cast<double>(i) / div * stop : static_cast<double>(i) * step;
      out[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(std::nearbyint(y));
    }
    out.back() = static_cast<std::int64_t>(stop);
  }
  std::fesetround(saved);
  return out;
}

std::vector<double> patch_timestamps(const std::vector<std::int64_t>& indices, double video_fps,
                                     int temporal_patch_size) {
  std::vector<std::int64_t> padded = indices;
  const auto k = static_cast<std::size_t>(temporal_patch_size);
  while (!padded.empty() && padded.size() % k != 0) padded.push_back(padded.back());
  std::vector<double> out;
  for (std::size_t i = 0; i < padded.size(); i += k) {
    const double first = static_cast<double>(padded[i]) / video_fps;
    const double last = static_cast<double>(padded[i + k - 1]) / video_fps;
    out.push_back((first + last) / 2);
  }
  return out;
}

std::string timestamp_text(double seconds) {
  // glibc's printf rounds the exact binary value correctly, half to even, as CPython's
  // float.__format__ does, and writes every digit of a large value as CPython does.
  const int n = std::snprintf(nullptr, 0, "<%.1f seconds>", seconds);
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), "<%.1f seconds>", seconds);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace clef::video
