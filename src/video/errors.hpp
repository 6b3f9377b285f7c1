#pragma once
// The clef::Error of each kind of video refusal, so every step words and classifies them alike.

#include <string>

#include "media/errors.hpp"
#include "util/error.hpp"

namespace clef::video {

/// Videos for the helpers shared with images (data URIs, URL fetching).
inline constexpr media::MediaKind kVideoMedia{"video", "invalid_video", "video_too_large",
                                              "unsupported_video", "video/*"};

/// 400: the bytes are not a video clef can read (corrupt or truncated container, no video stream,
/// a frame that does not decode).
inline Error bad_video(std::string message, std::string param = {}) {
  return Error(ErrorKind::invalid_request, "invalid_video", std::move(message), std::move(param));
}

/// 413: the video is over a configured limit (bytes, duration, frames, pixels, decode time).
inline Error video_too_large(std::string message, std::string param = {}) {
  return Error(ErrorKind::payload_too_large, "video_too_large", std::move(message),
               std::move(param));
}

/// 415: a container or codec clef does not decode.
inline Error unsupported_video(std::string message, std::string param = {}) {
  return Error(ErrorKind::unsupported_media_type, "unsupported_video", std::move(message),
               std::move(param));
}

}  // namespace clef::video
