#include "request/parse_media.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "util/error.hpp"

namespace clef::request {
namespace {

// Integer pixel counts and frame counts above this are refused as values, not as budgets.
constexpr std::int64_t kMaxIntegerArgument = std::int64_t{1} << 40;

double positive_number(const json::Value& v, const std::string& param) {
  double x = 0;
  if (v.is_float()) {
    x = v.as_double();
  } else if (v.is_integer()) {
    // As Python's float(int): the digits' value rounded (a huge integer is inf, refused below).
    x = std::strtod(v.integer_digits().c_str(), nullptr);
  } else {
    throw invalid_request(param + " must be a number, got " + v.type_name(), param);
  }
  if (!(x > 0) || !std::isfinite(x)) {
    throw invalid_request(param + " must be a finite number above 0", param);
  }
  return x;
}

std::string media_string(const json::Value& v, const std::string& param, const char* what) {
  if (!v.is_string()) {
    throw invalid_request(param + " must be a string (" + what + "), got " + v.type_name(), param);
  }
  return v.as_string();
}

Video parse_frame_list(const json::Value& item, const RequestLimits& limits,
                       const std::string& param) {
  Video video;
  const json::Value* frames = nullptr;
  for (const auto& [key, value] : item.members()) {
    if (key == "frames") {
      frames = &value;
    } else if (key == "fps") {
      if (!value.is_null()) video.fps = positive_number(value, param + ".fps");
    } else {
      throw invalid_request(
          param + "." + key + ": unknown key; a frame list is {\"frames\": [...], \"fps\": F}",
          param + "." + key);
    }
  }
  if (frames == nullptr || !frames->is_array() || frames->items().empty()) {
    throw invalid_request(param + ".frames must be a non-empty array of images", param + ".frames");
  }
  const auto& items = frames->items();
  if (items.size() > limits.max_listed_frames) {
    throw Error(ErrorKind::payload_too_large, "too_many_frames",
                param + ".frames has " + std::to_string(items.size()) + " frames; the limit is " +
                    std::to_string(limits.max_listed_frames),
                param + ".frames");
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    video.frames.push_back(
        media_string(items[i], param + ".frames." + std::to_string(i), "an image data URI or URL"));
  }
  return video;
}

}  // namespace

std::int64_t positive_integer(const json::Value& v, const std::string& param) {
  if (!v.is_integer()) {
    throw invalid_request(param + " must be an integer, got " + v.type_name(), param);
  }
  const std::string& digits = v.integer_digits();
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  if (ec != std::errc() || end != digits.data() + digits.size() || out < 1 ||
      out > kMaxIntegerArgument) {
    throw invalid_request(param + " must be an integer from 1 to " +
                              std::to_string(kMaxIntegerArgument) + ", got " + digits,
                          param);
  }
  return out;
}

int positive_int(const json::Value& v, const std::string& param) {
  const std::int64_t n = positive_integer(v, param);
  if (n > std::numeric_limits<int>::max()) {
    throw invalid_request(param + " is too large", param);
  }
  return static_cast<int>(n);
}

std::vector<Video> parse_videos(const json::Value* videos, const RequestLimits& limits) {
  std::vector<Video> out;
  if (videos == nullptr || videos->is_null()) return out;
  if (!videos->is_array()) {
    throw invalid_request("videos must be an array of videos (data URIs, URLs or frame lists)",
                          "videos");
  }
  const auto& items = videos->items();
  if (items.size() > limits.max_videos) {
    throw Error(ErrorKind::payload_too_large, "too_many_videos",
                "videos has " + std::to_string(items.size()) + " videos; the limit is " +
                    std::to_string(limits.max_videos),
                "videos");
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string param = "videos." + std::to_string(i);
    if (items[i].is_object()) {
      out.push_back(parse_frame_list(items[i], limits, param));
    } else {
      Video v;
      v.source = media_string(
          items[i], param, "a video data URI or URL, or an object {\"frames\": [...], \"fps\": F}");
      if (v.source.empty()) throw invalid_request(param + " must not be empty", param);
      out.push_back(std::move(v));
    }
  }
  return out;
}

MediaKwargs parse_media_kwargs(const json::Value* media_kwargs) {
  MediaKwargs out;
  if (media_kwargs == nullptr || media_kwargs->is_null()) return out;
  if (!media_kwargs->is_object()) {
    throw invalid_request(
        std::string("media_kwargs must be an object, got ") + media_kwargs->type_name(),
        "media_kwargs");
  }
  for (const auto& [key, value] : media_kwargs->members()) {
    const std::string param = "media_kwargs." + key;
    if (value.is_null()) continue;
    if (key == "fps") {
      out.fps = positive_number(value, param);
    } else if (key == "num_frames") {
      out.num_frames = positive_int(value, param);
    } else if (key == "do_sample_frames") {
      if (!value.is_bool()) {
        throw invalid_request(param + " must be a boolean, got " + value.type_name(), param);
      }
      out.do_sample_frames = value.as_bool();
    } else if (key == "min_frames") {
      out.min_frames = positive_int(value, param);
    } else if (key == "max_frames") {
      out.max_frames = positive_int(value, param);
    } else if (key == "min_pixels") {
      out.min_pixels = positive_integer(value, param);
    } else if (key == "max_pixels") {
      out.max_pixels = positive_integer(value, param);
    } else if (key == "size") {
      if (!value.is_object()) {
        throw invalid_request(
            param + " must be an object {\"shortest_edge\": N, \"longest_edge\": M}", param);
      }
      for (const auto& [k, v] : value.members()) {
        if (k == "shortest_edge") {
          out.size_shortest_edge = positive_integer(v, param + "." + k);
        } else if (k == "longest_edge") {
          out.size_longest_edge = positive_integer(v, param + "." + k);
        } else {
          throw invalid_request(
              param + "." + k + ": unknown key; size takes shortest_edge and longest_edge",
              param + "." + k);
        }
      }
      if (!out.size_shortest_edge || !out.size_longest_edge) {
        throw invalid_request(param + " must contain 'shortest_edge' and 'longest_edge'", param);
      }
    } else {
      throw invalid_request(param +
                                ": unknown key; accepted: fps, num_frames, do_sample_frames, "
                                "min_frames, max_frames, min_pixels, max_pixels, size",
                            param);
    }
  }
  if (out.fps && out.num_frames) {
    throw invalid_request("media_kwargs: fps and num_frames exclude each other; give one",
                          "media_kwargs");
  }
  return out;
}

}  // namespace clef::request
