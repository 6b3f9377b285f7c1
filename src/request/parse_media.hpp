#pragma once
// Validation of a request's `videos` and `media_kwargs` (decision contract sections 1 and 8).

#include <cstdint>
#include <vector>

#include "json/value.hpp"
#include "request/request.hpp"

namespace clef::request {

/// `v` as an integer from 1 to 2^40 (a JSON integer, not a bool or a float). Throws clef::Error
/// 400 naming `param` otherwise.
std::int64_t positive_integer(const json::Value& v, const std::string& param);

/// `v` as an int >= 1 (a JSON integer, not a bool or a float). Throws clef::Error 400 naming
/// `param` otherwise or when it exceeds an int.
int positive_int(const json::Value& v, const std::string& param);

/// `videos`: absent or null = none; else an array (at most limits.max_videos) whose items are a
/// string (a video's data URI or http(s) URL) or an object {"frames": [strings, 1 to
/// limits.max_listed_frames], "fps": number > 0 (optional)} with no other key. Throws clef::Error
/// 400 naming the item ("videos.0", "videos.0.frames.3", "videos.0.fps"), 413 over a count.
std::vector<Video> parse_videos(const json::Value* videos, const RequestLimits& limits);

/// `media_kwargs`: absent or null = none; else an object with only these keys:
/// fps (number > 0), num_frames (integer >= 1), do_sample_frames (boolean), min_frames and
/// max_frames (integers >= 1), min_pixels and max_pixels (integers >= 1), size (an object with
/// exactly the integer keys shortest_edge and longest_edge, >= 1); null values count as absent;
/// fps and num_frames exclude each other. Any other key is refused naming
/// "media_kwargs.<key>" (400).
MediaKwargs parse_media_kwargs(const json::Value* media_kwargs);

}  // namespace clef::request
