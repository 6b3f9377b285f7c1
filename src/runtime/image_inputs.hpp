#pragma once
// Request images on their way to the record and the backbone: decoded and gridded (so the token
// budget is known before anything expensive), then resized and encoded by the vision tower, and
// the M-RoPE positions of a record that holds them.

#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "record/record.hpp"
#include "vision/grid.hpp"
#include "vision/image.hpp"
#include "vision/image_source.hpp"
#include "vision/processor_config.hpp"

namespace clef::runtime {

/// One decoded request image and the grid the reference processor gives it.
struct DecodedImage {
  vision::RgbImage image;  ///< as decoded (Pillow's RGB, EXIF orientation applied)
  int resized_height = 0;  ///< smart_resize of the decoded size
  int resized_width = 0;
  vision::ImageGrid grid;
};

/// Loads (load_request_image) and grids every source, in order. Errors name "images.<i>".
std::vector<DecodedImage> decode_images(const std::vector<std::string>& sources,
                                        const vision::ImageSourcePolicy& policy,
                                        const vision::ProcessorConfig& processor);

/// The image at its processed size (vision::resize_for_processor: the reference's torch
/// antialiased bicubic, skipped when the size is already right), as preprocess_image does.
vision::RgbImage resized_image(const DecodedImage& image, const vision::ProcessorConfig& processor);

/// M-RoPE position of every token of `rec` whose image blocks have `grids` (one per
/// rec.images, same order): vision::mrope_positions over the image blocks (contract section 4).
/// A record without images gets plain positions 0..T-1. Throws clef::Error (internal) when the
/// grids do not match the blocks.
std::vector<backbone::RopePosition> record_positions(const record::Record& rec,
                                                     const std::vector<vision::ImageGrid>& grids);

}  // namespace clef::runtime
