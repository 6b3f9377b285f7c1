#pragma once
// Request videos on their way to the record and the backbone: opened and planned from their
// headers (so the token budget is checked before any frame is decoded), then decoded, resized and
// cut into temporal patches, each a vision block the tower encodes from two frames
// (decision contract section 8).

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "media/image_source.hpp"
#include "record/encode.hpp"
#include "request/request.hpp"
#include "runtime/prepare/image_inputs.hpp"
#include "video/container.hpp"
#include "video/limits.hpp"
#include "video/processor.hpp"
#include "vision/processor_config.hpp"

namespace clef::runtime {

/// Where request videos may come from and how large they may be.
struct VideoSourcePolicy {
  bool allow_urls = false;    ///< http(s) URLs (server --allow-media-urls)
  media::UrlFetchPolicy url;  ///< limits of URL fetching
  video::VideoLimits limits;  ///< per video
};

/// One request video, planned.
struct RequestVideo {
  int index = 0;      ///< i: its place in the request's videos
  std::string param;  ///< "videos.<i>"
  /// The open file (a data URI's or URL's bytes); null for a frame list.
  std::unique_ptr<video::VideoContainer> container;
  /// A frame list's images, loaded (bytes) and sized from their headers; empty for a file.
  std::vector<RequestImage> listed;
  int height = 0;  ///< input frame size
  int width = 0;
  std::int64_t total_frames = 0;  ///< the loader's frame count
  video::VideoPlan plan;
  /// What encode_record writes for it: each temporal patch's timestamp and token count.
  std::vector<record::VideoGroup> groups;
  /// A frame list's time spent reading frames, against time_limit (VideoLimits::decode_timeout).
  std::chrono::steady_clock::duration spent{};
  std::chrono::steady_clock::duration time_limit{};
};

/// The video processor's settings for a request: `base` (the tower's patch and merge sizes,
/// the class defaults otherwise) with the request's media_kwargs applied (fps, num_frames,
/// do_sample_frames, min_frames, max_frames, size).
video::VideoProcessorConfig video_config(const vision::ProcessorConfig& tower,
                                         const request::MediaKwargs& kwargs);

/// The image processor's settings for a request: `tower`'s with media_kwargs' size and then
/// min_pixels / max_pixels applied.
vision::ProcessorConfig image_config(const vision::ProcessorConfig& tower,
                                     const request::MediaKwargs& kwargs);

/// Opens and plans every video without decoding a frame of a file: a file is opened (data URI
/// video/mp4|webm|quicktime|x-matroska|x-msvideo, media-type parameters allowed, or an allowed
/// URL) and scanned (frame count and average rate as the reference's loader measures them). A
/// frame list is sampled from its length first: every frame's header is checked against the image
/// limits and the video frame-pixel limit, only the sampled frames are kept (URL frames: only
/// those are fetched), within the video byte and time limits, all of the first sampled frame's
/// size; that first frame is decoded for its oriented size. `cancelled` (may be empty) is asked
/// while reading: true throws DecisionCancelled. Errors name the video ("videos.0",
/// "videos.0.frames.2"): 400 / 413 / 415 / 422 as the source, container and processor rules say.
std::vector<RequestVideo> load_videos(const std::vector<request::Video>& videos,
                                      const VideoSourcePolicy& policy,
                                      const media::ImageSourcePolicy& image_policy,
                                      const video::VideoProcessorConfig& config,
                                      const std::function<bool()>& cancelled = {});

/// One temporal patch of `video` as a vision block without pixels yet: its param, input and
/// resized sizes and grid (what the token budget needs).
RequestImage patch_block(const RequestVideo& video);

/// Decodes `video`'s sampled frames, resizes and pads them (video::processed_frames) and returns
/// one vision block per temporal patch (RequestImage with image = first frame, second_frame =
/// second, grid = the patch's grid), in order. Releases the container.
std::vector<RequestImage> video_blocks(RequestVideo& video, const VideoSourcePolicy& policy,
                                       const media::ImageSourcePolicy& image_policy,
                                       const video::VideoProcessorConfig& config,
                                       const std::function<bool()>& cancelled = {});

/// A data URI of the video file at `path` for `clef ask --video`: the media type from the file's
/// first bytes (MP4/QuickTime, Matroska/WebM, AVI; else 415). Throws clef::Error (400 unreadable,
/// 413 over max_bytes) naming `param`.
std::string video_file_data_uri(const std::string& path, std::size_t max_bytes,
                                const std::string& param);

}  // namespace clef::runtime
