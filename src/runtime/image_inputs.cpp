#include "runtime/image_inputs.hpp"

#include "util/error.hpp"
#include "vision/mrope.hpp"
#include "vision/processor.hpp"
#include "vision/smart_resize.hpp"

namespace clef::runtime {

std::vector<DecodedImage> decode_images(const std::vector<std::string>& sources,
                                        const vision::ImageSourcePolicy& policy,
                                        const vision::ProcessorConfig& processor) {
  std::vector<DecodedImage> out;
  out.reserve(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::string param = "images." + std::to_string(i);
    DecodedImage d;
    d.image = vision::load_request_image(sources[i], policy, param);
    try {
      const vision::ResizedSize r =
          vision::smart_resize(d.image.height, d.image.width, processor.factor(),
                               processor.min_pixels, processor.max_pixels);
      d.resized_height = r.height;
      d.resized_width = r.width;
      d.grid = vision::image_grid(r.height, r.width, processor);
    } catch (const Error& e) {
      throw Error(e.kind(), e.code(), param + ": " + e.what(), param);
    }
    out.push_back(std::move(d));
  }
  return out;
}

vision::RgbImage resized_image(const DecodedImage& d, const vision::ProcessorConfig& processor) {
  return vision::resize_for_processor(d.image, processor);
}

std::vector<backbone::RopePosition> record_positions(const record::Record& rec,
                                                     const std::vector<vision::ImageGrid>& grids) {
  if (grids.size() != rec.images.size()) {
    throw Error(ErrorKind::internal, "internal", "record_positions: one grid per image block");
  }
  std::vector<vision::ImageSpan> spans;
  for (std::size_t i = 0; i < grids.size(); ++i) {
    if (static_cast<std::size_t>(grids[i].n_image_tokens()) != rec.images[i].n_tokens) {
      throw Error(ErrorKind::internal, "internal",
                  "record_positions: grid and image block sizes differ");
    }
    spans.push_back({rec.images[i].first_token, grids[i].merged_h, grids[i].merged_w});
  }
  const std::vector<vision::MropePosition> m = vision::mrope_positions(rec.ids.size(), spans);
  std::vector<backbone::RopePosition> out(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) out[i] = {m[i].t, m[i].h, m[i].w, m[i].z};
  return out;
}

}  // namespace clef::runtime
