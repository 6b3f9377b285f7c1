#include "backbone/mrope.hpp"

#include <algorithm>
#include <string>

#include "util/error.hpp"

namespace clef::backbone {
namespace {

Error bad_spans(const std::string& message) {
  return Error(ErrorKind::internal, "internal", "M-RoPE image spans: " + message);
}

RopePosition text_position(std::int64_t p) {
  const auto v = static_cast<std::int32_t>(p);
  return RopePosition{v, v, v, v};
}

}  // namespace

std::vector<RopePosition> mrope_positions(std::size_t n_tokens, std::span<const ImageSpan> images) {
  std::vector<RopePosition> out;
  out.reserve(n_tokens);
  std::int64_t shift = 0;  // how far positions lag behind indices after the images so far
  std::size_t next = 0;    // first index not yet placed
  for (const ImageSpan& img : images) {
    if (img.merged_h <= 0 || img.merged_w <= 0) throw bad_spans("empty image grid");
    const std::size_t n = static_cast<std::size_t>(img.merged_h) * img.merged_w;
    if (img.first_token == 0 || img.first_token < next) {
      throw bad_spans("image at index " + std::to_string(img.first_token) +
                      " overlaps the tokens before it");
    }
    if (img.first_token + n > n_tokens) {
      throw bad_spans("image at index " + std::to_string(img.first_token) + " with " +
                      std::to_string(n) + " tokens runs past the record's " +
                      std::to_string(n_tokens) + " tokens");
    }
    for (std::size_t i = next; i < img.first_token; ++i) {
      out.push_back(text_position(static_cast<std::int64_t>(i) - shift));
    }
    // Position of <|vision_start|> (index first_token - 1) plus one.
    const std::int64_t base = static_cast<std::int64_t>(img.first_token) - shift;
    for (std::size_t k = 0; k < n; ++k) {
      out.push_back(RopePosition{
          static_cast<std::int32_t>(base),
          static_cast<std::int32_t>(base + static_cast<std::int64_t>(k / img.merged_w)),
          static_cast<std::int32_t>(base + static_cast<std::int64_t>(k % img.merged_w)), 0});
    }
    shift += static_cast<std::int64_t>(n) - std::max(img.merged_h, img.merged_w);
    next = img.first_token + n;
  }
  for (std::size_t i = next; i < n_tokens; ++i) {
    out.push_back(text_position(static_cast<std::int64_t>(i) - shift));
  }
  return out;
}

std::vector<std::int32_t> llama_mrope_layout(std::span<const RopePosition> positions) {
  const std::size_t n = positions.size();
  std::vector<std::int32_t> pos(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    pos[i] = positions[i].t;
    pos[n + i] = positions[i].h;
    pos[2 * n + i] = positions[i].w;
    pos[3 * n + i] = positions[i].z;
  }
  return pos;
}

}  // namespace clef::backbone
