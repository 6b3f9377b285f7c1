#include "runtime/prepare/image_inputs.hpp"

#include "backbone/mrope.hpp"
#include "media/decode.hpp"
#include "media/probe.hpp"
#include "util/error.hpp"
#include "vision/processor.hpp"
#include "vision/smart_resize.hpp"

namespace clef::runtime {

namespace {

/// Runs `step`; a clef::Error it throws comes out naming `r.param` (in its message once, and as
/// its param), so that a request with several images says which one is at fault.
template <typename Step>
void naming_param(const RequestImage& r, Step&& step) {
  try {
    step();
  } catch (const Error& e) {
    const std::string what = e.what();
    const bool named = what.rfind(r.param + ":", 0) == 0 || what.rfind(r.param + " ", 0) == 0;
    throw Error(e.kind(), e.code(), named ? what : r.param + ": " + what, r.param);
  }
}

/// Sets the resized size and grid of a height x width image; errors name `param`.
void set_grid(RequestImage& r, int height, int width, const vision::ProcessorConfig& processor) {
  naming_param(r, [&] {
    const vision::ResizedSize size = vision::smart_resize(
        height, width, processor.factor(), processor.min_pixels, processor.max_pixels);
    r.resized_height = size.height;
    r.resized_width = size.width;
    r.grid = vision::image_grid(size.height, size.width, processor);
  });
}

}  // namespace

std::vector<RequestImage> load_images(const std::vector<std::string>& sources,
                                      const media::ImageSourcePolicy& policy,
                                      const vision::ProcessorConfig& processor) {
  std::vector<RequestImage> out(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    RequestImage& r = out[i];
    r.param = "images." + std::to_string(i);
    naming_param(r, [&] { r.bytes = media::load_request_bytes(sources[i], policy, r.param); });
    if (const auto size = media::probe_stored_size(r.bytes)) {
      // The decoder's own size check, on the header's size: an image too large to decode is
      // refused before its budget is weighed (its resized size would hide how large it is).
      naming_param(r, [&] {
        media::check_dimensions(static_cast<std::uint64_t>(size->width),
                                static_cast<std::uint64_t>(size->height), policy.limits);
      });
      set_grid(r, size->height, size->width, processor);
    } else {
      decode_pixels(r, policy, processor);
    }
  }
  return out;
}

void decode_pixels(RequestImage& r, const media::ImageSourcePolicy& policy,
                   const vision::ProcessorConfig& processor) {
  if (r.image.width > 0) return;
  const int expected = r.grid.n_image_tokens();
  naming_param(r, [&] { r.image = media::decode_image(r.bytes, policy.limits, r.param); });
  r.input_height = r.image.height;
  r.input_width = r.image.width;
  set_grid(r, r.image.height, r.image.width, processor);
  // A well-formed image's header size and decoded size differ at most by EXIF orientation (a
  // transpose), which leaves the token count unchanged; a crafted one may claim another size in
  // its header than its pixels have: refused, since its token budget was checked on the claim.
  if (expected != 0 && expected != r.grid.n_image_tokens()) {
    throw Error(ErrorKind::invalid_request, "invalid_image",
                r.param + ": the image's header and its pixels disagree on its size (" +
                    std::to_string(expected) + " vs " + std::to_string(r.grid.n_image_tokens()) +
                    " image tokens)",
                r.param);
  }
}

void prepare_pixels(RequestImage& r, const media::ImageSourcePolicy& policy,
                    const vision::ProcessorConfig& processor) {
  if (r.bytes.empty() && r.image.width > 0) return;  // already prepared
  decode_pixels(r, policy, processor);
  r.image = vision::resize_for_processor(r.image, processor);
  r.bytes = {};
}

std::vector<backbone::RopePosition> record_positions(const record::Record& rec,
                                                     const std::vector<vision::ImageGrid>& grids) {
  if (grids.size() != rec.images.size()) {
    throw Error(ErrorKind::internal, "internal", "record_positions: one grid per image block");
  }
  std::vector<backbone::ImageSpan> spans;
  for (std::size_t i = 0; i < grids.size(); ++i) {
    if (static_cast<std::size_t>(grids[i].n_image_tokens()) != rec.images[i].n_tokens) {
      throw Error(ErrorKind::internal, "internal",
                  "record_positions: grid and image block sizes differ");
    }
    spans.push_back({rec.images[i].first_token, grids[i].merged_h, grids[i].merged_w});
  }
  return backbone::mrope_positions(rec.ids.size(), spans);
}

}  // namespace clef::runtime
