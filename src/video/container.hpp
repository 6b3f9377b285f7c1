#pragma once
// A request video opened with FFmpeg's libraries (libavformat / libavcodec / libswscale) from
// bytes in memory: what its header says, and its frames decoded in order and converted to RGB.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "media/image.hpp"
#include "video/limits.hpp"

namespace clef::video {

/// Whether this process can open video files: FFmpeg's module (libclef_video_ffmpeg.so, beside
/// the executable or in ../lib/clef/) is there, else why not (the paths looked at). Does not load
/// it (the first video does); frame lists need none of it.
struct DecodingStatus {
  bool available = false;
  std::string reason;  ///< empty when available
};
DecodingStatus decoding_status();

/// What the container says about its (first) video stream, before any frame is decoded.
struct StreamInfo {
  int width = 0;   ///< frame width, pixels (codec parameters)
  int height = 0;  ///< frame height, pixels
  /// Frames the container's header declares (AVStream.nb_frames; 0 when it does not say, as
  /// Matroska / WebM files usually do not).
  std::int64_t header_frames = 0;
  /// The stream's average frame rate (AVStream.avg_frame_rate), frames per second; 0 if unknown.
  double average_fps = 0;
  /// Duration in seconds: the stream's, else the container's; 0 when neither is known.
  double duration_s = 0;
  std::string container;  ///< demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;      ///< decoder name, e.g. "h264"
};

/// The video stream measured from its packets.
struct ContentScan {
  std::int64_t frames = 0;  ///< packets of the video stream
  double begin_s = 0;       ///< smallest presentation time, seconds
  double end_s = 0;         ///< largest presentation time + that packet's duration, seconds
  /// The loader's average frame rate: frames / (end_s - begin_s), or the header's
  /// average_fps when that span is empty (torchcodec VideoStreamMetadata.average_fps).
  double average_fps = 0;
};

/// One open video. Owns its bytes. Not thread-safe. All calls together may work
/// VideoLimits::decode_timeout on it (time between calls does not count); each refuses with
/// clef::Error naming
/// `param`: 400 invalid_video (not a readable container, no video stream, a frame that does not
/// decode), 413 video_too_large (over a limit), 415 unsupported_video (a container or codec
/// outside the accepted set: MP4/QuickTime, Matroska/WebM, AVI; H.264, HEVC, VP8, VP9, AV1,
/// MPEG-4 part 2, MPEG-1/2, Motion JPEG, FFV1, PNG, raw video).
class VideoContainer {
 public:
  /// Opens `bytes` and reads the header. Refuses a video over limits.max_encoded_bytes or a frame
  /// larger than limits.max_frame_pixels (scan() measures duration and frames from the packets,
  /// and the decoder refuses a frame over the limit before allocating it). `cancelled` (may be
  /// empty) is asked while reading: when it says true, calls throw DecisionCancelled.
  VideoContainer(std::vector<std::uint8_t> bytes, const VideoLimits& limits, std::string param,
                 std::function<bool()> cancelled = {});
  ~VideoContainer();
  VideoContainer(const VideoContainer&) = delete;
  VideoContainer& operator=(const VideoContainer&) = delete;

  const StreamInfo& info() const noexcept;

  /// Reads every packet of the video stream without decoding (each holds one frame for every
  /// accepted codec) and returns what the reference loader's exact scan (torchcodec,
  /// seek_mode="exact") measures. Refuses more than limits.max_stream_frames and a span of
  /// presentation times over limits.max_duration_s. Each call starts from the first packet.
  ContentScan scan();

  /// Decodes the stream from the first packet and returns the frames whose 0-based index in the
  /// decoder's output order is in `indices` (ascending; repeats allowed and repeated in the
  /// result), converted to 8-bit RGB (RgbConverter) and then passed through `transform` (e.g. a
  /// resize, so that only one full-size frame is held at a time). Stops after the last index.
  /// Refuses an index the stream does not reach (400) and more decoded frames than
  /// limits.max_stream_frames (413).
  std::vector<media::RgbImage> decode(
      std::span<const std::int64_t> indices,
      const std::function<media::RgbImage(media::RgbImage)>& transform = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace clef::video
