#pragma once
// The tokenizer seen by the record encoder: one piece of text in, token ids out.

#include <cstdint>
#include <string_view>
#include <vector>

namespace clef::record {

/// A token id (the same width as llama.cpp's llama_token).
using TokenId = std::int32_t;

/// Tokenizes one piece of text the way the reference's `tokenizer(piece,
/// add_special_tokens=False)` does (decision contract, section 3): no BOS/EOS added, and
/// special-token strings such as "<|im_start|>" inside the piece become their special ids.
/// Implementations must be usable from several threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Token ids of `text` (UTF-8). Throws clef::Error (400) for text it cannot encode.
  virtual std::vector<TokenId> tokenize(std::string_view text) const = 0;

  /// Id of the special token whose text is `text` (e.g. "<|image_pad|>"), so that no special id
  /// is hard-coded. Throws clef::Error (model_error) when the vocabulary has no such token.
  virtual TokenId special_id(std::string_view text) const = 0;
};

}  // namespace clef::record
