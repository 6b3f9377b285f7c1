#pragma once
// Request images on their way to the record and the backbone: loaded and gridded from their
// headers (so the token budget is checked before any pixel is decoded or encoded), then decoded,
// resized and encoded by the vision tower; and the M-RoPE positions of a record that holds them.

#include <cstdint>
#include <string>
#include <vector>

#include "backbone/prefill_layout.hpp"
#include "media/image_source.hpp"
#include "record/record.hpp"
#include "runtime/loop/request_image.hpp"
#include "vision/grid.hpp"
#include "vision/processor_config.hpp"

namespace clef::runtime {

/// Loads every source (media::load_request_bytes) and grids it from its header
/// (media::probe_stored_size); an image whose header cannot be probed is decoded here (the
/// decoder gives the precise error). Errors name "images.<i>".
std::vector<RequestImage> load_images(const std::vector<std::string>& sources,
                                      const media::ImageSourcePolicy& policy,
                                      const vision::ProcessorConfig& processor);

/// Decodes `image`'s pixels (EXIF orientation applied) and sets its resized size from them.
/// Throws clef::Error naming image.param for an undecodable image.
void decode_pixels(RequestImage& image, const media::ImageSourcePolicy& policy,
                   const vision::ProcessorConfig& processor);

/// decode_pixels, then resizes the pixels to the processed size in place
/// (vision::resize_for_processor: the reference's torch antialiased bicubic, skipped when the size
/// is already right, as preprocess_image does) and drops the encoded bytes. Idempotent.
void prepare_pixels(RequestImage& image, const media::ImageSourcePolicy& policy,
                    const vision::ProcessorConfig& processor);

/// M-RoPE position of every token of `rec` whose image blocks have `grids` (one per
/// rec.images, same order): backbone::mrope_positions over the image blocks (contract section 4).
/// A record without images gets plain positions 0..T-1. Throws clef::Error (internal) when the
/// grids do not match the blocks.
std::vector<backbone::RopePosition> record_positions(const record::Record& rec,
                                                     const std::vector<vision::ImageGrid>& grids);

}  // namespace clef::runtime
