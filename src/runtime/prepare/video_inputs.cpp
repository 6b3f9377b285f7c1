#include "runtime/prepare/video_inputs.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "media/base64.hpp"
#include "media/data_uri.hpp"
#include "media/decode.hpp"
#include "media/errors.hpp"
#include "media/image_source.hpp"
#include "media/image_url.hpp"
#include "media/probe.hpp"
#include "util/error.hpp"

namespace clef::runtime {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<std::string_view, 7> kVideoMediaTypes = {
    "video/mp4",      "video/webm",      "video/quicktime", "video/x-matroska",
    "video/matroska", "video/x-msvideo", "video/avi"};

std::vector<std::uint8_t> load_video_bytes(std::string_view source, const VideoSourcePolicy& policy,
                                           const std::string& param) {
  const media::SourceKind kind = media::source_kind(source);
  if (kind == media::SourceKind::data_uri) {
    media::DataUri uri =
        media::split_data_uri(source, media::kVideoMedia, policy.limits.max_encoded_bytes, param,
                              "data:video/mp4;base64,...");
    // Media-type parameters ("video/mp4;codecs=avc1") are legal in a data URI: the type decides.
    const std::string type = uri.media_type.substr(0, uri.media_type.find(';'));
    if (std::find(kVideoMediaTypes.begin(), kVideoMediaTypes.end(), type) ==
        kVideoMediaTypes.end()) {
      throw media::kVideoMedia.unsupported(
          param + ": video media type '" + uri.media_type +
              "' is not supported; use video/mp4, video/webm, video/quicktime, "
              "video/x-matroska or video/x-msvideo",
          param);
    }
    return std::move(uri.bytes);
  }
  if (kind == media::SourceKind::url) {
    if (!policy.allow_urls) {
      throw Error(ErrorKind::unprocessable, "media_urls_disabled",
                  param +
                      ": media URLs are not enabled on this server (it must be started with "
                      "--allow-media-urls); send the video as a data URI",
                  param);
    }
    media::UrlFetchPolicy url = policy.url;
    url.max_bytes = policy.limits.max_encoded_bytes;  // the video limit, not the image one
    return media::fetch_media_url(source, url, param, media::kVideoMedia);
  }
  throw invalid_request(param +
                            ": a video must be a data URI (data:video/mp4;base64,...), a frame "
                            "list {\"frames\": [...], \"fps\": F} or, where the server allows "
                            "it, an http(s) URL",
                        param);
}

void plan(RequestVideo& v, double fps, const video::VideoProcessorConfig& config,
          const video::VideoLimits& limits) {
  v.plan = video::plan_video(v.total_frames, fps, v.height, v.width, config, v.param);
  if (static_cast<std::int64_t>(v.plan.indices.size()) > limits.max_sampled_frames) {
    throw media::kVideoMedia.too_large(
        v.param + ": the processor would keep " + std::to_string(v.plan.indices.size()) +
            " frames; this server takes at most " + std::to_string(limits.max_sampled_frames) +
            " (--max-video-frames): send a shorter video or a lower fps",
        v.param);
  }
  for (int g = 0; g < v.plan.groups; ++g) {
    v.groups.push_back({video::timestamp_text(v.plan.timestamps[static_cast<std::size_t>(g)]),
                        static_cast<std::size_t>(v.plan.tokens_per_group())});
  }
}

/// The image limits a frame of a frame list gets: the image ones, with the video frame-pixel
/// limit when it is lower.
media::ImageSourcePolicy frame_policy(const media::ImageSourcePolicy& image_policy,
                                      const VideoSourcePolicy& policy) {
  media::ImageSourcePolicy p = image_policy;
  p.limits.max_pixels = std::min(p.limits.max_pixels, policy.limits.max_frame_pixels);
  return p;
}

/// A frame list's work so far against the video time limit, and the client's presence.
void check_frame_work(RequestVideo& v, Clock::time_point since,
                      const std::function<bool()>& cancelled) {
  v.spent += Clock::now() - since;
  if (cancelled && cancelled()) {
    throw DecisionCancelled(v.param +
                            ": the client closed its connection while the frames were read");
  }
  if (v.spent > v.time_limit) {
    throw media::kVideoMedia.too_large(
        v.param + ": reading the frames took longer than " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(v.time_limit).count()) +
            " ms",
        v.param);
  }
}

/// Loads a frame list: every frame's header is checked (size limits); only the frames the
/// processor samples are kept (URLs: only those are fetched), all of the first sampled frame's
/// stored size; the first sampled frame is decoded (its oriented size is the video's).
void load_frame_list(RequestVideo& v, const request::Video& src, const VideoSourcePolicy& policy,
                     const media::ImageSourcePolicy& image_policy,
                     const video::VideoProcessorConfig& config,
                     const std::function<bool()>& cancelled) {
  const std::size_t n = src.frames.size();
  if (static_cast<std::int64_t>(n) > policy.limits.max_sampled_frames) {
    throw media::kVideoMedia.too_large(v.param + ".frames has " + std::to_string(n) +
                                           " frames; the limit is " +
                                           std::to_string(policy.limits.max_sampled_frames),
                                       v.param + ".frames");
  }
  v.time_limit = policy.limits.decode_timeout;
  v.total_frames = static_cast<std::int64_t>(n);
  // The reference's fallback for frames without metadata: 24 frames per second.
  const double fps = src.fps.value_or(24.0);
  const std::vector<std::int64_t> indices =
      video::sample_frame_indices(v.total_frames, fps, config.sampling, v.param);
  std::vector<bool> sampled(n, false);
  for (const std::int64_t k : indices) sampled[static_cast<std::size_t>(k)] = true;
  const media::ImageSourcePolicy fp = frame_policy(image_policy, policy);
  v.listed.resize(n);
  std::size_t kept_bytes = 0;
  int stored_w = 0;
  int stored_h = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto since = Clock::now();
    const bool url = media::source_kind(src.frames[k]) == media::SourceKind::url;
    if (!sampled[k] && url) continue;  // never fetched: the processor does not use it
    RequestImage& r = v.listed[k];
    r.param = v.param + ".frames." + std::to_string(k);
    std::vector<std::uint8_t> bytes = media::load_request_bytes(src.frames[k], fp, r.param);
    const auto size = media::probe_stored_size(bytes);
    if (size) {
      try {
        media::check_dimensions(static_cast<std::uint64_t>(size->width),
                                static_cast<std::uint64_t>(size->height), fp.limits);
      } catch (const Error& e) {
        throw Error(e.kind(), e.code(), r.param + ": " + e.what(), r.param);
      }
    }
    if (sampled[k]) {
      if (!size) {  // the decoder gives the precise error
        media::decode_image(bytes, fp.limits, r.param);
        throw media::kVideoMedia.invalid(r.param + ": the image's size cannot be read", r.param);
      }
      if (stored_w == 0) {
        stored_w = size->width;
        stored_h = size->height;
        r.image = media::decode_image(bytes, fp.limits, r.param);  // oriented
        v.width = r.image.width;
        v.height = r.image.height;
      } else if (size->width != stored_w || size->height != stored_h) {
        throw media::kVideoMedia.invalid(
            r.param + " is " + std::to_string(size->width) + "x" + std::to_string(size->height) +
                "; the frames of a video must all have the first frame's size (" +
                std::to_string(stored_w) + "x" + std::to_string(stored_h) + ")",
            r.param);
      } else {
        kept_bytes += bytes.size();
        r.bytes = std::move(bytes);
      }
      if (kept_bytes > policy.limits.max_encoded_bytes) {
        throw media::kVideoMedia.too_large(v.param + ".frames: the sampled frames are over " +
                                               std::to_string(policy.limits.max_encoded_bytes) +
                                               " bytes together",
                                           v.param + ".frames");
      }
    }
    check_frame_work(v, since, cancelled);
  }
  plan(v, fps, config, policy.limits);
}

}  // namespace

video::VideoProcessorConfig video_config(const vision::ProcessorConfig& tower,
                                         const request::MediaKwargs& kwargs) {
  video::VideoProcessorConfig c;
  c.patch_size = tower.patch_size;
  c.temporal_patch_size = tower.temporal_patch_size;
  c.merge_size = tower.merge_size;
  if (kwargs.size_shortest_edge) c.min_pixels = *kwargs.size_shortest_edge;
  if (kwargs.size_longest_edge) c.max_pixels = *kwargs.size_longest_edge;
  if (kwargs.fps) c.sampling.fps = *kwargs.fps;
  if (kwargs.num_frames) c.sampling.num_frames = *kwargs.num_frames;
  if (kwargs.do_sample_frames) c.sampling.do_sample_frames = *kwargs.do_sample_frames;
  if (kwargs.min_frames) c.sampling.min_frames = *kwargs.min_frames;
  if (kwargs.max_frames) c.sampling.max_frames = *kwargs.max_frames;
  return c;
}

vision::ProcessorConfig image_config(const vision::ProcessorConfig& tower,
                                     const request::MediaKwargs& kwargs) {
  vision::ProcessorConfig c = tower;
  if (kwargs.size_shortest_edge) c.min_pixels = *kwargs.size_shortest_edge;
  if (kwargs.size_longest_edge) c.max_pixels = *kwargs.size_longest_edge;
  if (kwargs.min_pixels) c.min_pixels = *kwargs.min_pixels;
  if (kwargs.max_pixels) c.max_pixels = *kwargs.max_pixels;
  return c;
}

std::vector<RequestVideo> load_videos(const std::vector<request::Video>& videos,
                                      const VideoSourcePolicy& policy,
                                      const media::ImageSourcePolicy& image_policy,
                                      const video::VideoProcessorConfig& config,
                                      const std::function<bool()>& cancelled) {
  std::vector<RequestVideo> out(videos.size());
  for (std::size_t i = 0; i < videos.size(); ++i) {
    RequestVideo& v = out[i];
    v.index = static_cast<int>(i);
    v.param = "videos." + std::to_string(i);
    const request::Video& src = videos[i];
    if (!src.is_frame_list()) {
      v.container = std::make_unique<video::VideoContainer>(
          load_video_bytes(src.source, policy, v.param), policy.limits, v.param, cancelled);
      const video::ContentScan scan = v.container->scan();
      v.height = v.container->info().height;
      v.width = v.container->info().width;
      v.total_frames = scan.frames;
      plan(v, scan.average_fps, config, policy.limits);
      continue;
    }
    load_frame_list(v, src, policy, image_policy, config, cancelled);
  }
  return out;
}

RequestImage patch_block(const RequestVideo& v) {
  RequestImage b;
  b.param = v.param;
  b.video = v.index;
  b.input_height = v.height;
  b.input_width = v.width;
  b.resized_height = v.plan.resized_height;
  b.resized_width = v.plan.resized_width;
  b.grid = v.plan.grid;
  return b;
}

std::vector<RequestImage> video_blocks(RequestVideo& v, const VideoSourcePolicy& policy,
                                       const media::ImageSourcePolicy& image_policy,
                                       const video::VideoProcessorConfig& config,
                                       const std::function<bool()>& cancelled) {
  // Each frame is checked and resized as soon as it is decoded: only one full-size frame is held.
  const auto resize = [&](media::RgbImage f) {
    if (f.width != v.width || f.height != v.height) {
      throw media::kVideoMedia.invalid(
          v.param + ": the video's frames change size (" + std::to_string(v.width) + "x" +
              std::to_string(v.height) + " first, " + std::to_string(f.width) + "x" +
              std::to_string(f.height) + " later)",
          v.param);
    }
    return video::resize_frame(f, v.plan);
  };
  std::vector<media::RgbImage> sampled;
  if (v.container) {
    sampled = v.container->decode(v.plan.indices, resize);
    v.container.reset();
  } else {
    const media::ImageSourcePolicy fp = frame_policy(image_policy, policy);
    for (std::size_t k = 0; k < v.plan.indices.size(); ++k) {
      if (k > 0 && v.plan.indices[k] == v.plan.indices[k - 1]) {
        sampled.push_back(sampled.back());
        continue;
      }
      const auto since = Clock::now();
      RequestImage& r = v.listed[static_cast<std::size_t>(v.plan.indices[k])];
      media::RgbImage frame =
          r.image.width > 0 ? std::move(r.image) : media::decode_image(r.bytes, fp.limits, r.param);
      r.bytes = {};
      sampled.push_back(resize(std::move(frame)));
      check_frame_work(v, since, cancelled);
    }
    v.listed.clear();
  }
  std::vector<media::RgbImage> frames = video::processed_frames(sampled, v.plan, config);
  std::vector<RequestImage> out(static_cast<std::size_t>(v.plan.groups));
  const auto tp = static_cast<std::size_t>(config.temporal_patch_size);
  for (std::size_t g = 0; g < out.size(); ++g) {
    RequestImage& b = out[g];
    b = patch_block(v);
    b.image = std::move(frames[g * tp]);
    b.second_frame = std::move(frames[g * tp + 1]);
  }
  return out;
}

std::string video_file_data_uri(const std::string& path, std::size_t max_bytes,
                                const std::string& param) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw invalid_request("cannot read video file '" + path + "'", param);
  if (size > max_bytes) {
    throw media::kVideoMedia.too_large("video file '" + path + "' is " + std::to_string(size) +
                                           " bytes; the limit is " + std::to_string(max_bytes),
                                       param);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_request("cannot read video file '" + path + "'", param);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  auto at = [&](std::size_t off, std::string_view s) {
    return bytes.size() >= off + s.size() &&
           std::memcmp(bytes.data() + off, s.data(), s.size()) == 0;
  };
  const char* media = nullptr;
  if (at(4, "ftyp") || at(4, "moov") || at(4, "mdat") || at(4, "wide") || at(4, "free")) {
    media = "video/mp4";
  } else if (at(0, "\x1a\x45\xdf\xa3")) {
    const std::string_view head(reinterpret_cast<const char*>(bytes.data()),
                                std::min<std::size_t>(bytes.size(), 64));
    media = head.find("webm") != std::string_view::npos ? "video/webm" : "video/x-matroska";
  } else if (at(0, "RIFF") && at(8, "AVI ")) {
    media = "video/x-msvideo";
  }
  if (media == nullptr) {
    throw media::kVideoMedia.unsupported(
        "video file '" + path + "' is not an MP4/QuickTime, Matroska/WebM or AVI file", param);
  }
  return std::string("data:") + media + ";base64," + media::encode_base64(bytes);
}

}  // namespace clef::runtime
