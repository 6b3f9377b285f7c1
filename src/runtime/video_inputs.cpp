#include "runtime/video_inputs.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "util/error.hpp"
#include "video/errors.hpp"
#include "vision/base64.hpp"
#include "vision/data_uri.hpp"
#include "vision/decode.hpp"
#include "vision/image_url.hpp"
#include "vision/probe.hpp"

namespace clef::runtime {
namespace {

constexpr std::array<std::string_view, 7> kVideoMediaTypes = {
    "video/mp4",      "video/webm",      "video/quicktime", "video/x-matroska",
    "video/matroska", "video/x-msvideo", "video/avi"};

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

/// Runs `step`; a clef::Error of the image helpers comes out as a video error of the same
/// status naming `param`.
template <typename Step>
auto as_video_error(const std::string& param, Step&& step) {
  try {
    return step();
  } catch (const DecisionCancelled&) {
    throw;
  } catch (const Error& e) {
    std::string code = e.code();
    if (code == "invalid_image") code = "invalid_video";
    if (code == "image_too_large") code = "video_too_large";
    if (code == "unsupported_image") code = "unsupported_video";
    throw Error(e.kind(), code, e.what(), e.param().empty() ? param : e.param());
  }
}

std::vector<std::uint8_t> load_video_bytes(std::string_view source, const VideoSourcePolicy& policy,
                                           const std::string& param) {
  if (starts_with_ci(source, "data:")) {
    vision::DataUri uri = as_video_error(param, [&] {
      return vision::split_data_uri(source, "video", policy.limits.max_encoded_bytes, param,
                                    "data:video/mp4;base64,...");
    });
    if (std::find(kVideoMediaTypes.begin(), kVideoMediaTypes.end(), uri.media_type) ==
        kVideoMediaTypes.end()) {
      throw video::unsupported_video(
          param + ": video media type '" + uri.media_type +
              "' is not supported; use video/mp4, video/webm, video/quicktime, "
              "video/x-matroska or video/x-msvideo",
          param);
    }
    return std::move(uri.bytes);
  }
  if (starts_with_ci(source, "http://") || starts_with_ci(source, "https://")) {
    if (!policy.allow_urls) {
      throw Error(ErrorKind::unprocessable, "media_urls_disabled",
                  param +
                      ": media URLs are not enabled on this server (it must be started with "
                      "--allow-media-urls); send the video as a data URI",
                  param);
    }
    vision::UrlFetchPolicy url = policy.url;
    url.max_bytes = policy.limits.max_encoded_bytes;  // the video limit, not the image one
    return as_video_error(param, [&] { return vision::fetch_image_url(source, url, param); });
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
    throw video::video_too_large(
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
                                      const vision::ImageSourcePolicy& image_policy,
                                      const video::VideoProcessorConfig& config) {
  std::vector<RequestVideo> out(videos.size());
  for (std::size_t i = 0; i < videos.size(); ++i) {
    RequestVideo& v = out[i];
    v.param = "videos." + std::to_string(i);
    const request::Video& src = videos[i];
    if (!src.is_frame_list()) {
      v.container = std::make_unique<video::VideoContainer>(
          load_video_bytes(src.source, policy, v.param), policy.limits, v.param);
      const video::ContentScan scan = v.container->scan();
      v.height = v.container->info().height;
      v.width = v.container->info().width;
      v.total_frames = scan.frames;
      plan(v, scan.average_fps, config, policy.limits);
      continue;
    }
    if (static_cast<int>(src.frames.size()) > policy.limits.max_sampled_frames) {
      throw video::video_too_large(v.param + ".frames has " + std::to_string(src.frames.size()) +
                                       " frames; the limit is " +
                                       std::to_string(policy.limits.max_sampled_frames),
                                   v.param + ".frames");
    }
    for (std::size_t k = 0; k < src.frames.size(); ++k) {
      RequestImage r;
      r.param = v.param + ".frames." + std::to_string(k);
      r.bytes = vision::load_request_bytes(src.frames[k], image_policy, r.param);
      if (const auto size = vision::probe_stored_size(r.bytes)) {
        vision::check_dimensions(static_cast<std::uint64_t>(size->width),
                                 static_cast<std::uint64_t>(size->height), image_policy.limits);
        r.input_height = size->height;
        r.input_width = size->width;
      } else {
        r.image = vision::decode_image(r.bytes, image_policy.limits, r.param);
        r.input_height = r.image.height;
        r.input_width = r.image.width;
      }
      if (k > 0 && (r.input_height != v.height || r.input_width != v.width)) {
        throw invalid_request(r.param + " is " + std::to_string(r.input_width) + "x" +
                                  std::to_string(r.input_height) + "; the frames of a video must " +
                                  "all have the first frame's size (" + std::to_string(v.width) +
                                  "x" + std::to_string(v.height) + ")",
                              r.param);
      }
      v.height = r.input_height;
      v.width = r.input_width;
      v.listed.push_back(std::move(r));
    }
    v.total_frames = static_cast<std::int64_t>(v.listed.size());
    // The reference's fallback for frames without metadata: 24 frames per second.
    plan(v, src.fps.value_or(24.0), config, policy.limits);
  }
  return out;
}

RequestImage patch_block(const RequestVideo& v) {
  RequestImage b;
  b.param = v.param;
  b.input_height = v.height;
  b.input_width = v.width;
  b.resized_height = v.plan.resized_height;
  b.resized_width = v.plan.resized_width;
  b.grid = v.plan.grid;
  return b;
}

std::vector<RequestImage> video_blocks(RequestVideo& v,
                                       const vision::ImageSourcePolicy& image_policy,
                                       const video::VideoProcessorConfig& config) {
  // Each frame is checked and resized as soon as it is decoded: only one full-size frame is held.
  const auto resize = [&](vision::RgbImage f) {
    if (f.width != v.width || f.height != v.height) {
      throw video::bad_video(v.param + ": the video's frames change size (" +
                                 std::to_string(v.width) + "x" + std::to_string(v.height) +
                                 " first, " + std::to_string(f.width) + "x" +
                                 std::to_string(f.height) + " later)",
                             v.param);
    }
    return video::resize_frame(f, v.plan);
  };
  std::vector<vision::RgbImage> sampled;
  if (v.container) {
    sampled = v.container->decode(v.plan.indices, resize);
    v.container.reset();
  } else {
    for (std::size_t k = 0; k < v.plan.indices.size(); ++k) {
      if (k > 0 && v.plan.indices[k] == v.plan.indices[k - 1]) {
        sampled.push_back(sampled.back());
        continue;
      }
      RequestImage& r = v.listed[static_cast<std::size_t>(v.plan.indices[k])];
      vision::RgbImage frame = r.image.width > 0
                                   ? std::move(r.image)
                                   : vision::decode_image(r.bytes, image_policy.limits, r.param);
      sampled.push_back(resize(std::move(frame)));
    }
    v.listed.clear();
  }
  std::vector<vision::RgbImage> frames = video::processed_frames(sampled, v.plan, config);
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
    throw video::video_too_large("video file '" + path + "' is " + std::to_string(size) +
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
    throw video::unsupported_video(
        "video file '" + path + "' is not an MP4/QuickTime, Matroska/WebM or AVI file", param);
  }
  return std::string("data:") + media + ";base64," + vision::encode_base64(bytes);
}

}  // namespace clef::runtime
