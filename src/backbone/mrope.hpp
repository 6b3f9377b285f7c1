#pragma once
// M-RoPE positions of a record with images (decision contract section 4) and the layout
// libllama expects for them under IMROPE (llama.cpp tools/mtmd: mtmd_image_tokens_get_decoder_pos
// and mtmd-helper-common.h set_position_mrope_2d / set_position_mrope_1d).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backbone/prefill_layout.hpp"

namespace clef::backbone {

/// Where one image's tokens sit in a record: `first_token` is the index of its first
/// <|image_pad|> (right after <|vision_start|>), followed by merged_h * merged_w image tokens.
struct ImageSpan {
  std::size_t first_token = 0;
  int merged_h = 0;
  int merged_w = 0;
};

/// Positions of all n_tokens tokens of a record. Text token i gets (p, p, p) with p = i minus
/// the shifts of the images before it; image token k of an image whose <|vision_start|> has
/// position q gets (q+1, q+1 + k / W, q+1 + k % W); after an image of H x W = N tokens the
/// following token's position is q+1 + max(H, W), i.e. the shift grows by N - max(H, W).
/// With no image this is 0..n_tokens-1. Throws clef::Error (internal) if the spans are not in
/// order, overlap, start at index 0 (no room for <|vision_start|>), have an empty grid, or run
/// past n_tokens.
std::vector<RopePosition> mrope_positions(std::size_t n_tokens, std::span<const ImageSpan> images);

/// libllama's llama_batch.pos for a batch of these tokens with n_pos_per_embd = 4:
/// section-major [t of every token][h ...][w ...][z ...], 4 * positions.size() values
/// (row h is mtmd's y, column w its x).
std::vector<std::int32_t> llama_mrope_layout(std::span<const RopePosition> positions);

}  // namespace clef::backbone
