#include "record/llama_tokenizer.hpp"

#include <llama.h>

#include <algorithm>
#include <climits>

#include "record/nfc.hpp"
#include "util/error.hpp"

namespace clef::record {
namespace {

std::string token_text(const llama_vocab* vocab, llama_token id) {
  std::string buf(64, '\0');
  int32_t n = llama_token_to_piece(vocab, id, buf.data(), static_cast<int32_t>(buf.size()), 0,
                                   /*special=*/true);
  if (n < 0) {
    buf.resize(static_cast<std::size_t>(-n));
    n = llama_token_to_piece(vocab, id, buf.data(), static_cast<int32_t>(buf.size()), 0, true);
  }
  buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return buf;
}

bool has_non_ascii(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

}  // namespace

LlamaTokenizer::LlamaTokenizer(const llama_vocab* vocab, Normalization normalization)
    : vocab_(vocab), normalization_(normalization) {
  if (vocab_ == nullptr) throw model_error("LlamaTokenizer: no vocabulary");
  const int32_t n = llama_vocab_n_tokens(vocab_);
  const int special_attrs =
      LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED | LLAMA_TOKEN_ATTR_UNKNOWN;
  for (llama_token id = 0; id < n; ++id) {
    if ((llama_vocab_get_attr(vocab_, id) & special_attrs) == 0) continue;
    std::string text = token_text(vocab_, id);
    if (text.empty()) continue;
    special_first_byte_[static_cast<unsigned char>(text[0])] = true;
    special_last_byte_[static_cast<unsigned char>(text.back())] = true;
    special_ids_.emplace(text, id);  // the first id wins for a repeated text
    specials_.emplace_back(std::move(text), id);
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

TokenId LlamaTokenizer::special_id(std::string_view text) const {
  const auto it = special_ids_.find(text);
  if (it == special_ids_.end()) {
    throw model_error("the vocabulary has no special token " + std::string(text));
  }
  return it->second;
}

// NFC of each run of text between special-token strings (matched leftmost, longest first).
std::string LlamaTokenizer::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  std::size_t run = 0;  // start of the current plain-text run
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t matched = 0;
    if (special_first_byte_[static_cast<unsigned char>(text[pos])]) {
      for (const auto& [s, id] : specials_) {
        if (text.compare(pos, s.size(), s) == 0) {
          matched = s.size();
          break;
        }
      }
    }
    if (matched == 0) {
      ++pos;
      continue;
    }
    out += nfc(text.substr(run, pos - run));
    out.append(text.substr(pos, matched));
    pos += matched;
    run = pos;
  }
  out += nfc(text.substr(run));
  return out;
}

std::vector<TokenId> LlamaTokenizer::tokenize(std::string_view text) const {
  if (normalization_ == Normalization::nfc && has_non_ascii(text)) {
    return tokenize_raw(normalize(text));
  }
  return tokenize_raw(text);
}

namespace {

bool ascii_letter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool ascii_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

/// True when the code point that ends at text[at - 1] may be whitespace to the pre-tokenizer
/// (ASCII controls and space, and Unicode's White_Space outside ASCII; text is valid UTF-8).
bool whitespace_before(std::string_view text, std::size_t at) {
  std::size_t start = at - 1;
  while (start > 0 && at - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
    --start;
  const auto lead = static_cast<unsigned char>(text[start]);
  if (lead < 0x80) return lead <= 0x20 || lead == 0x7f;
  std::uint32_t cp = lead >= 0xF0 ? lead & 0x07u : lead >= 0xE0 ? lead & 0x0Fu : lead & 0x1Fu;
  for (std::size_t k = start + 1; k < at; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(text[k]) & 0x3Fu);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || cp == 0x180E ||
         (cp >= 0x2000 && cp <= 0x200B) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

}  // namespace

bool LlamaTokenizer::special_crosses(std::string_view text, std::size_t at) const {
  const std::size_t longest = specials_.empty() ? 0 : specials_.front().first.size();
  for (std::size_t p = at > longest ? at - longest + 1 : 0; p < at && p < text.size(); ++p) {
    if (!special_first_byte_[static_cast<unsigned char>(text[p])]) continue;
    for (const auto& [s, id] : specials_) {
      if (p + s.size() > at && text.compare(p, s.size(), s) == 0) return true;
    }
  }
  return false;
}

bool LlamaTokenizer::special_bound(std::string_view text, std::size_t at) const {
  for (const auto& [s, id] : specials_) {
    // A special text starting at `at`, or ending there, that no other special text overlaps:
    // llama.cpp's partition takes it whole, so the raw text on each side is split there.
    if (text.compare(at, s.size(), s) == 0 && !special_crosses(text, at + s.size())) return true;
    if (at >= s.size() && text.compare(at - s.size(), s.size(), s) == 0 &&
        !special_crosses(text, at - s.size()))
      return true;
  }
  return false;
}

bool LlamaTokenizer::safe_cut(std::string_view text, std::size_t at) const {
  if (at == 0 || at >= text.size()) return false;
  // No special token's text may span the cut (it would be two plain pieces on each side).
  if (special_crosses(text, at)) return false;
  const auto before = static_cast<unsigned char>(text[at - 1]);
  const auto after = static_cast<unsigned char>(text[at]);
  if ((special_first_byte_[after] || special_last_byte_[before]) && special_bound(text, at)) {
    return true;
  }
  // Before a space after anything but whitespace: every match that holds the code point before
  // ends there (a space only ever leads a match or belongs to a run of whitespace).
  if (after == ' ' && !whitespace_before(text, at)) return true;
  const auto printable = [](unsigned char c) { return c >= 0x20 && c < 0x7f; };
  if (!printable(before) || !printable(after) || before == ' ') return false;
  return ascii_letter(before)  ? !ascii_letter(after)
         : ascii_digit(before) ? true
                               : ascii_digit(after) || after == ' ';
}

TokenPrefix LlamaTokenizer::tokenize_prefix(std::string_view text, std::size_t keep,
                                            const util::MemoryCharge& charge) const {
  TokenPrefix out;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = std::min(text.size(), at + kPieceBytes);
    while (end < text.size() && !safe_cut(text, end)) ++end;
    // Each piece as the default takes a whole text: charged while it is tokenized.
    const TokenPrefix piece =
        Tokenizer::tokenize_prefix(text.substr(at, end - at), keep - out.ids.size(), charge);
    out.total += piece.total;
    out.ids.insert(out.ids.end(), piece.ids.begin(), piece.ids.end());
    at = end;
  }
  return out;
}

std::vector<TokenId> LlamaTokenizer::tokenize_raw(std::string_view text) const {
  if (text.size() > static_cast<std::size_t>(INT32_MAX / 2)) {
    throw invalid_request("text too long to tokenize");
  }
  const auto len = static_cast<int32_t>(text.size());
  std::vector<TokenId> ids(text.size() + 2);
  int32_t n = llama_tokenize(vocab_, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()),
                             /*add_special=*/false, /*parse_special=*/true);
  if (n < 0 && n != INT32_MIN) {
    ids.resize(static_cast<std::size_t>(-n));
    n = llama_tokenize(vocab_, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()),
                       false, true);
  }
  if (n < 0) throw invalid_request("text could not be tokenized");
  ids.resize(static_cast<std::size_t>(n));
  return ids;
}

}  // namespace clef::record
