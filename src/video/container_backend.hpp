#pragma once
// The seam between VideoContainer and the FFmpeg code behind it. The FFmpeg side is a module
// (libclef_video_ffmpeg.so) loaded on the first video, so that the clef executable does not load
// FFmpeg's libraries (and the dozens they pull in) at start: a run without videos never maps
// them, and tools that cannot run one of their initializers (valgrind and libhwy's rdtscp) still
// run clef.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "video/container.hpp"

namespace clef::video {

/// What VideoContainer forwards to (see container.hpp for the contract of each call).
class ContainerBackend {
 public:
  virtual ~ContainerBackend() = default;
  virtual const StreamInfo& info() const noexcept = 0;
  virtual ContentScan scan() = 0;
  virtual std::vector<media::RgbImage> decode(
      std::span<const std::int64_t> indices,
      const std::function<media::RgbImage(media::RgbImage)>& transform) = 0;
};

/// The module's entry point (exported unmangled as kOpenContainerSymbol): opens `bytes` as a
/// container and sets `out`, or throws clef::Error as VideoContainer's constructor does.
using OpenContainerFn = void(std::vector<std::uint8_t>& bytes, const VideoLimits& limits,
                             const std::string& param, const std::function<bool()>& cancelled,
                             std::unique_ptr<ContainerBackend>& out);

inline constexpr const char* kOpenContainerSymbol = "clef_video_open_container";

}  // namespace clef::video
