// The tiny backbone loads in libllama as a hybrid qwen35 model and gives finite, well-conditioned
// final-norm hidden states: with embeddings = true (pooling none, llama_get_embeddings_ith) for 100
// tokens in one batch, and for a 2048-token prompt in one decode through the unmasked nextn rows
// of llama-ext.h (the same final-norm states without the LM head, checked equal on 100 tokens).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "llama-ext.h"
#include "llama.h"
#include "support/tiny_model.hpp"

namespace clef::testmodel {
namespace {

struct ModelFree {
  void operator()(llama_model* m) const { llama_model_free(m); }
};
struct ContextFree {
  void operator()(llama_context* c) const { llama_free(c); }
};
using ModelPtr = std::unique_ptr<llama_model, ModelFree>;
using ContextPtr = std::unique_ptr<llama_context, ContextFree>;

ModelPtr load_tiny() {
  test::ensure_llama_backend();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  return ModelPtr(llama_model_load_from_file(test::tiny_model().backbone.string().c_str(), mp));
}

/// How the final-norm hidden states are read.
enum class Rows {
  embeddings,  ///< embeddings = true, every token an output, llama_get_embeddings_ith
  nextn,       ///< llama_set_embeddings_nextn(unmasked), no output flagged, no LM head
};

/// Threads for decoding: CLEF_TEST_THREADS, default 1 (ggml worker threads spin-wait, which is
/// slow on the shared, oversubscribed CI cores).
int test_threads() {
  const char* env = std::getenv("CLEF_TEST_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

ContextPtr hidden_state_context(llama_model* model, Rows mode, std::uint32_t n_ctx,
                                std::uint32_t n_batch, std::uint32_t n_ubatch) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_ubatch = n_ubatch;
  cp.n_seq_max = 1;
  cp.embeddings = mode == Rows::embeddings;
  cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
  if (mode == Rows::nextn) cp.n_outputs_max = 1;  // no logits buffer for every token
  cp.n_threads = test_threads();
  cp.n_threads_batch = test_threads();
  ContextPtr ctx(llama_init_from_model(model, cp));
  if (ctx && mode == Rows::nextn) llama_set_embeddings_nextn(ctx.get(), true, false);
  return ctx;
}

/// `n` token ids from tokenizing a JSON-like record text with the model's own vocabulary.
std::vector<llama_token> prompt_tokens(const llama_model* model, std::size_t n) {
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::string text = "<|im_start|>system\nDecide every field jointly.<|im_end|>\n";
  for (int i = 0; text.size() < 16 * n; ++i) {
    text += "{\"ticket\":" + std::to_string(i * 7919) + ",\"summary\":\"printer on floor " +
            std::to_string(i % 13) + " is offline again\",\"urgency\":[\"low\",\"high\"]}\n";
  }
  std::vector<llama_token> ids(text.size() + 16);
  const int got = llama_tokenize(vocab, text.data(), static_cast<int>(text.size()), ids.data(),
                                 static_cast<int>(ids.size()), false, true);
  EXPECT_GE(got, static_cast<int>(n));
  ids.resize(n);
  return ids;
}

/// Decodes `ids` in batches of `n_batch` (positions 0..n-1) and returns the final-norm hidden
/// states, row-major [n, n_embd].
std::vector<float> hidden_states(llama_context* ctx, Rows mode, const std::vector<llama_token>& ids,
                                 int n_batch, int n_embd) {
  std::vector<float> rows;
  llama_batch batch = llama_batch_init(n_batch, 0, 1);
  for (std::size_t start = 0; start < ids.size(); start += n_batch) {
    const int n = static_cast<int>(std::min<std::size_t>(n_batch, ids.size() - start));
    batch.n_tokens = n;
    for (int i = 0; i < n; ++i) {
      batch.token[i] = ids[start + i];
      batch.pos[i] = static_cast<llama_pos>(start + i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = mode == Rows::embeddings ? 1 : 0;
    }
    const int rc = llama_decode(ctx, batch);
    EXPECT_EQ(rc, 0);
    if (rc != 0) break;
    for (int i = 0; i < n; ++i) {
      const float* row = mode == Rows::embeddings ? llama_get_embeddings_ith(ctx, i)
                                                  : llama_get_embeddings_nextn_ith(ctx, i);
      EXPECT_NE(row, nullptr);
      if (!row) break;
      rows.insert(rows.end(), row, row + n_embd);
    }
  }
  llama_batch_free(batch);
  return rows;
}

/// Every value finite; every row's RMS near 1 (output_norm weights are ~1); consecutive rows
/// differ (the states carry the input).
void expect_well_conditioned(const std::vector<float>& rows, std::size_t n, int n_embd) {
  ASSERT_EQ(rows.size(), n * n_embd);
  std::size_t non_finite = 0, bad_rms = 0, same_as_prev = 0;
  for (std::size_t t = 0; t < n; ++t) {
    double ss = 0, diff = 0;
    for (int j = 0; j < n_embd; ++j) {
      const float v = rows[t * n_embd + j];
      if (!std::isfinite(v)) ++non_finite;
      ss += double(v) * v;
      if (t > 0) diff += std::fabs(double(v) - rows[(t - 1) * n_embd + j]);
    }
    const double rms = std::sqrt(ss / n_embd);
    if (!(rms > 0.5 && rms < 2.0)) ++bad_rms;
    if (t > 0 && diff < 1e-3) ++same_as_prev;
  }
  EXPECT_EQ(non_finite, 0u);
  EXPECT_EQ(bad_rms, 0u);
  EXPECT_EQ(same_as_prev, 0u);
}

TEST(TinyBackbone, LoadsAsHybridQwen35) {
  const ModelPtr model = load_tiny();
  ASSERT_NE(model, nullptr);
  const Preset& p = test::tiny_model().preset;
  EXPECT_EQ(llama_model_n_embd(model.get()), static_cast<int>(p.backbone.n_embd));
  EXPECT_EQ(llama_model_n_embd_inp(model.get()), static_cast<int>(p.backbone.n_embd));
  EXPECT_EQ(llama_model_n_layer(model.get()), static_cast<int>(p.backbone.n_layer));
  EXPECT_EQ(llama_model_n_head(model.get()), static_cast<int>(p.backbone.n_head));
  EXPECT_EQ(llama_model_n_head_kv(model.get()), static_cast<int>(p.backbone.n_head_kv));
  EXPECT_TRUE(llama_model_is_hybrid(model.get()));
  EXPECT_EQ(llama_model_rope_type(model.get()), LLAMA_ROPE_TYPE_IMROPE);
  EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(model.get())),
            static_cast<int>(test::tiny_model().n_vocab));
  char arch[32] = {};
  llama_model_meta_val_str(model.get(), "general.architecture", arch, sizeof arch);
  EXPECT_STREQ(arch, "qwen35");
}

TEST(TinyBackbone, HundredTokensInOneBatchGiveFiniteHiddenStates) {
  const ModelPtr model = load_tiny();
  ASSERT_NE(model, nullptr);
  const ContextPtr ctx = hidden_state_context(model.get(), Rows::embeddings, 256, 128, 128);
  ASSERT_NE(ctx, nullptr);
  const std::vector<llama_token> ids = prompt_tokens(model.get(), 100);
  const int n_embd = llama_model_n_embd(model.get());
  const std::vector<float> rows = hidden_states(ctx.get(), Rows::embeddings, ids, 128, n_embd);
  expect_well_conditioned(rows, ids.size(), n_embd);

  // The nextn rows used for long prompts are the same final-norm states.
  const ContextPtr nextn = hidden_state_context(model.get(), Rows::nextn, 256, 128, 128);
  ASSERT_NE(nextn, nullptr);
  const std::vector<float> same = hidden_states(nextn.get(), Rows::nextn, ids, 128, n_embd);
  ASSERT_EQ(same.size(), rows.size());
  double max_diff = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(rows[i]) - same[i]));
  }
  EXPECT_LE(max_diff, 1e-5);
}

TEST(TinyBackbone, PromptOf2048TokensStaysFinite) {
  const ModelPtr model = load_tiny();
  ASSERT_NE(model, nullptr);
  // One decode call of 2048 tokens, split into ubatches of 512 by llama.cpp.
  const ContextPtr ctx = hidden_state_context(model.get(), Rows::nextn, 2048, 2048, 512);
  ASSERT_NE(ctx, nullptr);
  const std::vector<llama_token> ids = prompt_tokens(model.get(), 2048);
  const int n_embd = llama_model_n_embd(model.get());
  const std::vector<float> rows = hidden_states(ctx.get(), Rows::nextn, ids, 2048, n_embd);
  expect_well_conditioned(rows, ids.size(), n_embd);
}

}  // namespace
}  // namespace clef::testmodel
