#pragma once
// Loading a llama.cpp vocabulary with the reference's pre-tokenizer (decision contract, section 7).

#include <memory>
#include <string>
#include <vector>

#include <llama.h>

namespace clef::record {

/// Which pre-tokenizer regex llama.cpp uses.
enum class PreTokenizer {
  qwen2,      ///< the plain Qwen2 regex, as the reference tokenizer (default for clef)
  from_file,  ///< whatever the GGUF's `tokenizer.ggml.pre` says (`qwen35` for Qwen3.5 files)
};

/// The metadata override `tokenizer.ggml.pre = "qwen2"`, for llama_model_params::kv_overrides.
llama_model_kv_override qwen2_pretokenizer_override();

/// A kv-override list for `pre`, terminated by an empty key as llama.cpp expects (so that
/// `.data()` can be passed as llama_model_params::kv_overrides). Only the terminator for
/// from_file.
std::vector<llama_model_kv_override> pretokenizer_overrides(PreTokenizer pre);

/// Owns a vocabulary-only llama_model (llama_model_params::vocab_only = true). The caller must
/// have called llama_backend_init().
class VocabModel {
 public:
  /// Loads the GGUF at `path`. Throws clef::Error (model_error) when llama.cpp cannot load it.
  static VocabModel load(const std::string& path, PreTokenizer pre = PreTokenizer::qwen2);

  const llama_vocab* vocab() const noexcept { return llama_model_get_vocab(model_.get()); }

 private:
  struct Free {
    void operator()(llama_model* m) const noexcept { llama_model_free(m); }
  };
  explicit VocabModel(llama_model* m) : model_(m) {}
  std::unique_ptr<llama_model, Free> model_;
};

}  // namespace clef::record
