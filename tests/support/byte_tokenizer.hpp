#pragma once
// The byte-level test tokenizer of tests/data/oracle/records/README.md: special strings matched
// greedily left to right, longest first, ids 1000..1008; every other run NFC-normalized, then one
// token per UTF-8 byte (ids 0..255).

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "record/nfc.hpp"
#include "record/tokenizer.hpp"
#include "util/error.hpp"

namespace clef::test {

class ByteTokenizer final : public record::Tokenizer {
 public:
  ByteTokenizer() {
    std::stable_sort(specials_.begin(), specials_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }

  std::vector<record::TokenId> tokenize(std::string_view text) const override {
    std::vector<record::TokenId> ids;
    std::size_t run = 0, pos = 0;
    auto flush = [&](std::size_t end) {
      for (unsigned char c : record::nfc(text.substr(run, end - run))) ids.push_back(c);
    };
    while (pos < text.size()) {
      const auto it = std::find_if(specials_.begin(), specials_.end(), [&](const auto& s) {
        return text.compare(pos, s.first.size(), s.first) == 0;
      });
      if (it == specials_.end()) {
        ++pos;
        continue;
      }
      flush(pos);
      ids.push_back(it->second);
      pos += it->first.size();
      run = pos;
    }
    flush(text.size());
    return ids;
  }

  record::TokenId special_id(std::string_view text) const override {
    for (const auto& [s, id] : specials_) {
      if (s == text) return id;
    }
    throw model_error("no special token " + std::string(text));
  }

 private:
  std::vector<std::pair<std::string, record::TokenId>> specials_ = {
      {"<|endoftext|>", 1000},    {"<|im_start|>", 1001},   {"<|im_end|>", 1002},
      {"<|vision_start|>", 1003}, {"<|vision_end|>", 1004}, {"<|image_pad|>", 1005},
      {"<|video_pad|>", 1006},    {"<think>", 1007},        {"</think>", 1008}};
};

}  // namespace clef::test
