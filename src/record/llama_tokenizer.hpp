#pragma once
// The Tokenizer over a llama.cpp vocabulary (the real Qwen3.5 vocabulary of a GGUF).

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "record/tokenizer.hpp"

struct llama_vocab;

namespace clef::record {

/// Text normalization applied before llama.cpp's pre-tokenizer.
enum class Normalization {
  none,  ///< the text as given (llama.cpp's own behaviour)
  nfc,   ///< Unicode NFC, as the reference's Qwen2Tokenizer does (contract 7); the default
};

/// Tokenizes with libllama: llama_tokenize(add_special = false, parse_special = true), so special
/// strings inside a piece become special ids. With Normalization::nfc, the text between special
/// tokens is NFC-normalized first, never across a special token ("cafe\u0301" and "caf\u00e9"
/// give the same ids).
///
/// The pre-tokenizer regex is the vocabulary's (`tokenizer.ggml.pre`). The reference uses NFC +
/// the plain Qwen2 regex, so the engine loads the vocabulary with the override of
/// qwen2_pretokenizer_override() (record/llama_vocab.hpp) and keeps the default Normalization::nfc.
/// llama.cpp's `qwen35` regex (letters + \p{M}) differs on text with combining marks.
class LlamaTokenizer final : public Tokenizer {
 public:
  /// `vocab` must outlive the tokenizer. Scans the vocabulary once for its special tokens
  /// (control, user-defined and unknown tokens, as llama.cpp's special-token partition does).
  explicit LlamaTokenizer(const llama_vocab* vocab,
                          Normalization normalization = Normalization::nfc);

  std::vector<TokenId> tokenize(std::string_view text) const override;
  /// The same ids as the default, in pieces of about kPieceBytes cut where the pre-tokenizer
  /// always splits (safe_cut), so memory follows the piece, not the text: a 13 MB state cut to
  /// its first 16k tokens costs its first pieces' tokens plus a count of the rest.
  TokenPrefix tokenize_prefix(std::string_view text, std::size_t keep,
                              const util::MemoryCharge& charge = {}) const override;
  TokenId special_id(std::string_view text) const override;

  /// Bytes a tokenize_prefix piece reaches before it looks for a cut.
  static constexpr std::size_t kPieceBytes = 64 * 1024;

  /// True when the ids of text[0, at) followed by those of text[at, end) are the ids of `text`.
  /// No special-token text may cross `at`, and then one of:
  ///   - a special token's text starts or ends at `at` and no other overlaps it: llama.cpp splits
  ///     the text there before pre-tokenizing, and clef's NFC runs between special texts;
  ///   - an ASCII space at `at` after a code point that is not whitespace: every match of the
  ///     Qwen2 / qwen35 pre-tokenizer regex that holds that code point ends there (a space only
  ///     leads a match or belongs to a whitespace run; the regex looks ahead, never behind), and
  ///     NFC never joins a space to what precedes it;
  ///   - printable ASCII on both sides (NFC cannot join them), and a piece always ends there:
  ///     after a letter before anything but a letter; after a digit (\p{N} is one digit a
  ///     piece); after punctuation (a run of [^\s\p{L}\p{N}], or a contraction) before a digit.
  /// Never after whitespace (`\s+(?!\S)` looks ahead).
  bool safe_cut(std::string_view text, std::size_t at) const;

 private:
  /// True when a special token's text starts before `at` and ends after it.
  bool special_crosses(std::string_view text, std::size_t at) const;
  /// True when a special token's text that no other overlaps starts or ends at `at`.
  bool special_bound(std::string_view text, std::size_t at) const;
  std::vector<TokenId> tokenize_raw(std::string_view text) const;
  std::string normalize(std::string_view text) const;

  const llama_vocab* vocab_;
  Normalization normalization_;
  std::vector<std::pair<std::string, TokenId>> specials_;  // longest text first
  std::map<std::string, TokenId, std::less<>> special_ids_;
  std::array<bool, 256> special_first_byte_{};  // first bytes of the special texts
  std::array<bool, 256> special_last_byte_{};   // last bytes of the special texts
};

}  // namespace clef::record
