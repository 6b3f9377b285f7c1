#pragma once
// The tokenizer seen by the record encoder: one piece of text in, token ids out.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "util/memory_budget.hpp"

namespace clef::record {

/// A token id (the same width as llama.cpp's llama_token).
using TokenId = std::int32_t;

/// The first ids of a text and how many it has in all (Tokenizer::tokenize_prefix).
struct TokenPrefix {
  std::vector<TokenId> ids;  ///< the first `keep` ids (all of them when there are fewer)
  std::size_t total = 0;     ///< the ids of the whole text
};

/// What tokenizing one byte of text may take at its peak (llama.cpp's pre-tokenizer keeps a
/// code point, an offset and a string per piece, its BPE a symbol and a queued bigram per code
/// point; measured: a 5 MB run of letters peaked about 118 bytes a byte above its text).
inline constexpr std::size_t kTokenizeBytesPerByte = 128;

/// Tokenizes one piece of text the way the reference's `tokenizer(piece,
/// add_special_tokens=False)` does (decision contract, section 3): no BOS/EOS added, and
/// special-token strings such as "<|im_start|>" inside the piece become their special ids.
/// Implementations must be usable from several threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Token ids of `text` (UTF-8). Throws clef::Error (400) for text it cannot encode.
  virtual std::vector<TokenId> tokenize(std::string_view text) const = 0;

  /// The first `keep` ids of tokenize(text) and its size. This default tokenizes the whole text
  /// at once, charging `charge` (when set) kTokenizeBytesPerByte a byte while it does.
  virtual TokenPrefix tokenize_prefix(std::string_view text, std::size_t keep,
                                      const util::MemoryCharge& charge = {}) const {
    const auto cost = static_cast<std::ptrdiff_t>(text.size() * kTokenizeBytesPerByte);
    if (charge) charge(cost);
    TokenPrefix out;
    out.ids = tokenize(text);
    if (charge) charge(-cost);
    out.total = out.ids.size();
    out.ids.resize(std::min(out.ids.size(), keep));
    return out;
  }

  /// Id of the special token whose text is `text` (e.g. "<|image_pad|>"), so that no special id
  /// is hard-coded. Throws clef::Error (model_error) when the vocabulary has no such token.
  virtual TokenId special_id(std::string_view text) const = 0;
};

}  // namespace clef::record
