#pragma once
// The backbone: a qwen35 GGUF loaded through libllama, run as ONE prefill per record, returning
// the final-norm hidden state of every position (contract section 4) without computing LM-head
// logits for any token.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backbone/backbone_params.hpp"
#include "backbone/llama_handles.hpp"

namespace clef::backbone {

/// Final-norm hidden states of a record: `rows` x `n_embd` floats, row-major (row t = token t).
struct HiddenStates {
  int rows = 0;
  int n_embd = 0;
  std::vector<float> data;

  std::span<const float> row(int t) const {
    return {data.data() + static_cast<std::size_t>(t) * n_embd, static_cast<std::size_t>(n_embd)};
  }
};

/// Length of the prefill chunk that starts at token `start` of a `total`-token record: `chunk`,
/// except that the last two chunks become (chunk - 1, 2) instead of (chunk, 1). The layout
/// depends only on (total, chunk), so a record always gives bit-identical hidden states.
int chunk_length(int total, int start, int chunk);

/// A loaded backbone with one llama context. Not thread-safe: one prefill at a time (the server's
/// decision runtime serializes calls).
class Backbone {
 public:
  /// Loads `gguf_path` (mmap) and creates the context. `kv_overrides` (terminated by an entry with
  /// an empty key, or empty) replace GGUF metadata at load, e.g. the tokenizer's pre-tokenizer.
  /// Throws clef::Error (model_error) when the file cannot be loaded or is not a usable qwen35
  /// backbone (wrong arch), invalid_request for bad params.
  Backbone(const std::string& gguf_path, const BackboneParams& params,
           std::span<const llama_model_kv_override> kv_overrides = {});

  int n_embd() const noexcept { return n_embd_; }
  int n_vocab() const noexcept;
  int context_size() const noexcept { return params_.context_size; }
  const BackboneParams& params() const noexcept { return params_; }
  const llama_model* model() const noexcept { return model_.get(); }
  llama_model* model() noexcept { return model_.get(); }
  const llama_vocab* vocab() const noexcept;

  /// Runs one prefill over `ids` from a fresh state (KV cache and recurrent state cleared first)
  /// with plain positions 0..T-1, in chunks of params().chunk_tokens, and returns [T, n_embd].
  /// Throws clef::Error: invalid_request if ids is empty or longer than context_size, internal if
  /// llama_decode fails.
  HiddenStates hidden_states(std::span<const std::int32_t> ids);

 private:
  BackboneParams params_;
  LlamaModelPtr model_;
  LlamaContextPtr ctx_;
  int n_embd_ = 0;
};

}  // namespace clef::backbone
