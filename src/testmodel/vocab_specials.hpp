#pragma once
// Special tokens the real Qwen3.5 vocabulary has and the test vocabulary
// (models/ggml-vocab-qwen35.gguf, a Qwen2 vocabulary of 151,936 ids) lacks.

#include <cstdint>
#include <string_view>
#include <vector>

#include "gguf.h"

namespace clef::testmodel {

/// The Qwen3.5 special tokens a clef record uses besides <|im_start|>, <|im_end|> and
/// <|endoftext|> (decision contract section 3): <|vision_start|>, <|vision_end|>, <|image_pad|>,
/// <|video_pad|>, <think>, </think>.
const std::vector<std::string_view>& record_special_tokens();

/// Appends each of `texts` that `kv`'s tokenizer.ggml.tokens does not already hold, in the given
/// order, as a CONTROL token (tokenizer.ggml.token_type 3; tokenizer.ggml.scores 0 when the
/// vocabulary has scores). Other tokenizer keys (merges, ids of existing tokens) are untouched, so
/// the new ids follow the old ones. Returns the new token count. Throws std::runtime_error when
/// `kv` has no tokenizer.ggml.tokens or its token_type / scores arrays have another length.
std::uint32_t append_control_tokens(gguf_context* kv, const std::vector<std::string_view>& texts);

/// Appends NORMAL tokens "<|clef_pad_N|>" (no merge makes them, so no text tokenizes to them)
/// until `kv`'s vocabulary has `n_vocab` tokens, as a model with a larger vocabulary than the
/// test tokenizer's has rows nothing uses. Returns the new token count. Throws like
/// append_control_tokens.
std::uint32_t pad_vocabulary(gguf_context* kv, std::uint32_t n_vocab);

}  // namespace clef::testmodel
