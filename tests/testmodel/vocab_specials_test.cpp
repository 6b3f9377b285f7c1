// The test backbone's vocabulary: the pinned Qwen2 test vocabulary plus the record's vision and
// thinking tokens, appended as CONTROL tokens that llama.cpp's tokenizer matches as one id each.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gguf.h"
#include "llama.h"
#include "support/tiny_model.hpp"
#include "testmodel/vocab_specials.hpp"

namespace clef::testmodel {
namespace {

struct GgufFree {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
using GgufPtr = std::unique_ptr<gguf_context, GgufFree>;

GgufPtr read_meta(const std::filesystem::path& path) {
  gguf_init_params params{};
  params.no_alloc = true;
  return GgufPtr(gguf_init_from_file(path.string().c_str(), params));
}

std::vector<std::string> tokens_of(const gguf_context* kv) {
  const std::int64_t id = gguf_find_key(kv, "tokenizer.ggml.tokens");
  std::vector<std::string> out(gguf_get_arr_n(kv, id));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = gguf_get_arr_str(kv, id, i);
  return out;
}

TEST(TestVocabulary, AppendsTheMissingRecordTokensAsControlTokens) {
  const GgufPtr source = read_meta(default_vocab_gguf());
  const GgufPtr made = read_meta(test::tiny_model().backbone);
  ASSERT_NE(source, nullptr);
  ASSERT_NE(made, nullptr);
  const std::vector<std::string> before = tokens_of(source.get());
  const std::vector<std::string> after = tokens_of(made.get());

  // Which record tokens the source lacks, read from the source itself.
  std::vector<std::string> missing;
  for (const auto text : record_special_tokens()) {
    if (std::find(before.begin(), before.end(), text) == before.end()) missing.emplace_back(text);
  }
  ASSERT_FALSE(missing.empty());
  ASSERT_EQ(after.size(), before.size() + missing.size());
  EXPECT_EQ(test::tiny_model().n_vocab, after.size());
  // Old ids unchanged, new ones appended in order.
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
  EXPECT_TRUE(std::equal(missing.begin(), missing.end(), after.begin() + before.size()));

  const std::int64_t types = gguf_find_key(made.get(), "tokenizer.ggml.token_type");
  ASSERT_GE(types, 0);
  ASSERT_EQ(gguf_get_arr_n(made.get(), types), after.size());
  const auto* t = static_cast<const std::int32_t*>(gguf_get_arr_data(made.get(), types));
  for (std::size_t i = before.size(); i < after.size(); ++i) EXPECT_EQ(t[i], 3) << after[i];
  // Merges untouched.
  const std::int64_t m0 = gguf_find_key(source.get(), "tokenizer.ggml.merges");
  const std::int64_t m1 = gguf_find_key(made.get(), "tokenizer.ggml.merges");
  ASSERT_GE(m0, 0);
  ASSERT_GE(m1, 0);
  EXPECT_EQ(gguf_get_arr_n(source.get(), m0), gguf_get_arr_n(made.get(), m1));
}

TEST(TestVocabulary, LlamaTokenizesEachRecordTokenAsOneControlId) {
  test::ensure_llama_backend();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.vocab_only = true;
  const std::unique_ptr<llama_model, decltype(&llama_model_free)> model(
      llama_model_load_from_file(test::tiny_model().backbone.string().c_str(), mp),
      &llama_model_free);
  ASSERT_NE(model, nullptr);
  const llama_vocab* vocab = llama_model_get_vocab(model.get());
  ASSERT_EQ(llama_vocab_n_tokens(vocab), static_cast<int>(test::tiny_model().n_vocab));
  for (const auto text : record_special_tokens()) {
    const std::string s(text);
    llama_token ids[8];
    const int n = llama_tokenize(vocab, s.data(), static_cast<int>(s.size()), ids, 8, false, true);
    ASSERT_EQ(n, 1) << s;
    EXPECT_TRUE(llama_vocab_get_attr(vocab, ids[0]) & LLAMA_TOKEN_ATTR_CONTROL) << s;
    char piece[32] = {};
    const int len = llama_token_to_piece(vocab, ids[0], piece, sizeof piece, 0, true);
    EXPECT_EQ(std::string(piece, len > 0 ? len : 0), s);
  }
}

TEST(TestVocabulary, AppendingIsIdempotent) {
  const GgufPtr made = read_meta(test::tiny_model().backbone);
  ASSERT_NE(made, nullptr);
  GgufPtr copy(gguf_init_empty());
  gguf_set_kv(copy.get(), made.get());
  EXPECT_EQ(append_control_tokens(copy.get(), record_special_tokens()), test::tiny_model().n_vocab);
}

TEST(TestVocabulary, PaddingAddsUnusedNormalTokensUpToTheSize) {
  const GgufPtr made = read_meta(test::tiny_model().backbone);
  ASSERT_NE(made, nullptr);
  GgufPtr copy(gguf_init_empty());
  gguf_set_kv(copy.get(), made.get());
  const std::uint32_t before = test::tiny_model().n_vocab;
  EXPECT_EQ(pad_vocabulary(copy.get(), before + 1000), before + 1000);
  const auto tokens = tokens_of(copy.get());
  ASSERT_EQ(tokens.size(), before + 1000u);
  EXPECT_EQ(tokens[before], "<|clef_pad_" + std::to_string(before) + "|>");
  const std::int64_t types = gguf_find_key(copy.get(), "tokenizer.ggml.token_type");
  const auto* type = static_cast<const std::int32_t*>(gguf_get_arr_data(copy.get(), types));
  EXPECT_EQ(type[before + 999], 1);  // LLAMA_TOKEN_TYPE_NORMAL: never matched as a special token
  // Already that large: nothing changes.
  EXPECT_EQ(pad_vocabulary(copy.get(), before), before + 1000);
}

}  // namespace
}  // namespace clef::testmodel
