#pragma once
// Limits on a request video, checked from the container's header before any frame is decoded,
// and the bounds on decoding itself.

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace clef::video {

/// Refusal thresholds for one video (server options --max-video-*; the count per request is the
/// request module's job).
struct VideoLimits {
  /// Largest encoded video (the file's bytes after base64 decoding), bytes.
  std::size_t max_encoded_bytes = std::size_t{64} * 1024 * 1024;  // 64 MiB
  /// Longest video, seconds (from the container's header; a file without a duration is measured
  /// by reading its packets).
  double max_duration_s = 600;
  /// Most frames in the stream (decoding reads every frame up to the last sampled one).
  std::int64_t max_stream_frames = 36'000;
  /// Most frames the processor may keep (after sampling; frame lists: their length).
  int max_sampled_frames = 768;
  /// Largest frame, width * height, from the header.
  std::uint64_t max_frame_pixels = std::uint64_t{3840} * 2160;
  /// Longest wall time for probing and decoding one video.
  std::chrono::milliseconds decode_timeout{60'000};
};

}  // namespace clef::video
