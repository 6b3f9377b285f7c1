#include "testmodel/vocab_specials.hpp"

#include <stdexcept>
#include <string>
#include <unordered_set>

namespace clef::testmodel {

namespace {

constexpr std::int32_t kNormal = 1;   // LLAMA_TOKEN_TYPE_NORMAL
constexpr std::int32_t kControl = 3;  // LLAMA_TOKEN_TYPE_CONTROL

std::uint32_t append_tokens(gguf_context* kv, const std::vector<std::string_view>& texts,
                            std::int32_t type);

std::int64_t find_array(const gguf_context* kv, const char* key, gguf_type elem, std::size_t n) {
  const std::int64_t id = gguf_find_key(kv, key);
  if (id < 0) return -1;
  if (gguf_get_kv_type(kv, id) != GGUF_TYPE_ARRAY || gguf_get_arr_type(kv, id) != elem ||
      gguf_get_arr_n(kv, id) != n) {
    throw std::runtime_error(std::string("gguf: ") + key +
                             " is not an array of the vocabulary's length");
  }
  return id;
}

}  // namespace

const std::vector<std::string_view>& record_special_tokens() {
  static const std::vector<std::string_view> texts = {"<|vision_start|>", "<|vision_end|>",
                                                      "<|image_pad|>",    "<|video_pad|>",
                                                      "<think>",          "</think>"};
  return texts;
}

std::uint32_t append_control_tokens(gguf_context* kv, const std::vector<std::string_view>& texts) {
  return append_tokens(kv, texts, kControl);
}

std::uint32_t pad_vocabulary(gguf_context* kv, std::uint32_t n_vocab) {
  const std::int64_t tokens_id = gguf_find_key(kv, "tokenizer.ggml.tokens");
  const std::size_t n = tokens_id < 0 ? 0 : gguf_get_arr_n(kv, tokens_id);
  std::vector<std::string> pads;
  for (std::size_t i = n; i < n_vocab; ++i)
    pads.push_back("<|clef_pad_" + std::to_string(i) + "|>");
  return append_tokens(kv, {pads.begin(), pads.end()}, kNormal);
}

namespace {

std::uint32_t append_tokens(gguf_context* kv, const std::vector<std::string_view>& texts,
                            std::int32_t type) {
  const std::int64_t tokens_id = gguf_find_key(kv, "tokenizer.ggml.tokens");
  if (tokens_id < 0 || gguf_get_arr_type(kv, tokens_id) != GGUF_TYPE_STRING) {
    throw std::runtime_error("gguf: no tokenizer.ggml.tokens string array");
  }
  const std::size_t n = gguf_get_arr_n(kv, tokens_id);
  std::vector<std::string> tokens(n);
  for (std::size_t i = 0; i < n; ++i) tokens[i] = gguf_get_arr_str(kv, tokens_id, i);

  const std::int64_t types_id = find_array(kv, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, n);
  const std::int64_t scores_id = find_array(kv, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, n);
  std::vector<std::int32_t> types;
  std::vector<float> scores;
  if (types_id >= 0) {
    const auto* p = static_cast<const std::int32_t*>(gguf_get_arr_data(kv, types_id));
    types.assign(p, p + n);
  }
  if (scores_id >= 0) {
    const auto* p = static_cast<const float*>(gguf_get_arr_data(kv, scores_id));
    scores.assign(p, p + n);
  }

  bool changed = false;
  // The Qwen2 test vocabulary has "</s>" as a plain token; llama.cpp treats it as an end-of-turn
  // token and forces it to CONTROL at every load with a "probably a bug in the model" warning.
  // Mark it CONTROL here, which is what llama.cpp uses anyway, so loads are quiet.
  if (types_id >= 0) {
    for (std::size_t i = 0; i < n; ++i) {
      if (tokens[i] == "</s>" && types[i] != kControl) {
        types[i] = kControl;
        changed = true;
      }
    }
  }
  std::unordered_set<std::string> present(tokens.begin(), tokens.end());
  for (const std::string_view text : texts) {
    if (!present.emplace(text).second) continue;
    tokens.emplace_back(text);
    if (types_id >= 0) types.push_back(type);
    if (scores_id >= 0) scores.push_back(0.0f);
    changed = true;
  }
  if (changed) {
    std::vector<const char*> strs(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) strs[i] = tokens[i].c_str();
    gguf_set_arr_str(kv, "tokenizer.ggml.tokens", strs.data(), strs.size());
    if (types_id >= 0) {
      gguf_set_arr_data(kv, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types.data(),
                        types.size());
    }
    if (scores_id >= 0) {
      gguf_set_arr_data(kv, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores.data(),
                        scores.size());
    }
  }
  return static_cast<std::uint32_t>(tokens.size());
}

}  // namespace

}  // namespace clef::testmodel
