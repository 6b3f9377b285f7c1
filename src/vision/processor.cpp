#include "vision/processor.hpp"

#include "vision/smart_resize.hpp"

namespace clef::vision {

media::RgbImage resize_for_processor(const media::RgbImage& image, const ProcessorConfig& config,
                                     ResampleKind kind) {
  const ResizedSize size = smart_resize(image.height, image.width, config.factor(),
                                        config.min_pixels, config.max_pixels);
  if (size.height == image.height && size.width == image.width) return image;
  return resize_bicubic(image, size.width, size.height, kind);
}

ProcessedImage preprocess_image(const media::RgbImage& image, const ProcessorConfig& config,
                                ResampleKind kind) {
  const ResizedSize size = smart_resize(image.height, image.width, config.factor(),
                                        config.min_pixels, config.max_pixels);
  ProcessedImage out;
  out.resized_height = size.height;
  out.resized_width = size.width;
  out.grid = image_grid(size.height, size.width, config);
  if (size.height == image.height && size.width == image.width) {
    out.pixel_values = make_patches(image, config);
  } else {
    out.pixel_values = make_patches(resize_bicubic(image, size.width, size.height, kind), config);
  }
  return out;
}

}  // namespace clef::vision
