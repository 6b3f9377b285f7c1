#pragma once
// One vision block of a prepared request (runtime::PreparedRequest::images): what preparation
// (runtime/prepare/image_inputs.hpp) makes of an image or a video's temporal patch and the runner
// gives the vision tower.

#include <cstdint>
#include <string>
#include <vector>

#include "media/image.hpp"
#include "vision/grid.hpp"

namespace clef::runtime {

/// One vision block of a request: an image (its bytes, the grid the reference processor gives
/// it, and after prepare_pixels the RGB pixels the vision tower takes), or one temporal patch of
/// a video (its two processed frames, `image` and `second_frame`; see video_inputs.hpp).
struct RequestImage {
  std::string param;                ///< "images.<i>" or "videos.<i>"
  std::vector<std::uint8_t> bytes;  ///< encoded (PNG, JPEG or WebP); dropped by prepare_pixels
  /// Decoded pixels (EXIF orientation applied); after prepare_pixels, resized to the processor's
  /// size (resized_height x resized_width), the tower's input.
  media::RgbImage image;
  int input_height = 0;  ///< decoded, oriented size (0 until decoded)
  int input_width = 0;
  int resized_height = 0;  ///< smart_resize of the (oriented) size
  int resized_width = 0;
  vision::ImageGrid grid;
  /// A video's temporal patch: its second frame (the tower's second temporal slot), at the
  /// resized size; empty for an image (the tower repeats `image`).
  media::RgbImage second_frame;
  /// A video's temporal patch: the video's index in the request; -1 for an image.
  int video = -1;
  /// cache::image_digest of the resized pixels (both frames of a temporal patch; set when the
  /// engine keeps a state cache).
  std::string digest;
};

}  // namespace clef::runtime
