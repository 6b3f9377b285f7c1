#pragma once
// The whole image path of the reference processor for one decoded image: smart resize, resize,
// normalize, patchify (transformers Qwen2VLImageProcessor with the TorchvisionBackend, as the
// model's processor_config.json selects it).

#include "media/image.hpp"
#include "vision/grid.hpp"
#include "vision/patches.hpp"
#include "vision/processor_config.hpp"
#include "vision/resample.hpp"

namespace clef::vision {

/// One image ready for the vision tower.
struct ProcessedImage {
  int resized_height = 0;
  int resized_width = 0;
  ImageGrid grid;
  PatchTensor pixel_values;  ///< [grid.n_patches(), 1536]
};

/// `image` at the size the processor gives it, smart_resize(h, w) with config's factor and min/max
/// pixels, resized with `kind` (returned unchanged when the size is already right): the pixels the
/// vision tower gets. Throws clef::Error (400) for an aspect ratio above 200.
media::RgbImage resize_for_processor(const media::RgbImage& image,
                                     const ProcessorConfig& config = {},
                                     ResampleKind kind = ResampleKind::torch_bicubic_aa);

/// Resizes `image` to smart_resize(h, w) (skipped when the size is already right) with `kind`
/// (the reference's torchvision kernel by default) and patchifies it. Throws clef::Error (400)
/// for an aspect ratio above 200.
ProcessedImage preprocess_image(const media::RgbImage& image, const ProcessorConfig& config = {},
                                ResampleKind kind = ResampleKind::torch_bicubic_aa);

}  // namespace clef::vision
