#pragma once
// The kinds of media a request carries (images, videos) and the clef::Error of each refusal, so
// every decoder and fetcher words and classifies them the same way.

#include <string>
#include <string_view>

#include "util/error.hpp"

namespace clef::media {

/// What a request's media item is, for the helpers that images and videos share (data URIs,
/// URL fetching): the noun their refusals use, their error codes and the HTTP Accept header; and
/// the clef::Error of each kind of refusal, so every step words and classifies them alike.
struct MediaKind {
  std::string_view noun;              ///< "image", "video"
  std::string_view invalid_code;      ///< 400
  std::string_view too_large_code;    ///< 413
  std::string_view unsupported_code;  ///< 415
  std::string_view accept;            ///< Accept header of a URL fetch

  /// 400: the bytes are not a valid item of the format they claim (corrupt, truncated, bad
  /// base64; for a video also no video stream, a frame that does not decode).
  Error invalid(std::string message, std::string param = {}) const {
    return Error(ErrorKind::invalid_request, std::string(invalid_code), std::move(message),
                 std::move(param));
  }
  /// 413: the item is over a configured limit (bytes, pixels; a video's duration, frames,
  /// decode time).
  Error too_large(std::string message, std::string param = {}) const {
    return Error(ErrorKind::payload_too_large, std::string(too_large_code), std::move(message),
                 std::move(param));
  }
  /// 415: a format, container or codec clef does not decode (GIF, CMYK JPEG, animated WebP, ...).
  Error unsupported(std::string message, std::string param = {}) const {
    return Error(ErrorKind::unsupported_media_type, std::string(unsupported_code),
                 std::move(message), std::move(param));
  }
};

/// Images: PNG, JPEG, WebP.
inline constexpr MediaKind kImageMedia{"image", "invalid_image", "image_too_large",
                                       "unsupported_image", "image/png, image/jpeg, image/webp"};

/// Videos (video/): what FFmpeg's demuxers take.
inline constexpr MediaKind kVideoMedia{"video", "invalid_video", "video_too_large",
                                       "unsupported_video", "video/*"};

}  // namespace clef::media
