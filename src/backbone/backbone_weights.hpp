#pragma once
// A loaded qwen35 backbone's weights (llama.cpp's llama_model), apart from any context: const
// once loaded and shared by every Backbone (a llama context) made on them and by the tokenizer's
// users, as llama.cpp's llama_model is shared by its llama_contexts.

#include <llama.h>

#include <memory>
#include <span>
#include <string>

#include "backbone/backbone_params.hpp"
#include "backbone/llama_handles.hpp"

namespace clef::backbone {

/// The model's general.architecture ("qwen35"), "" when the GGUF does not say.
std::string architecture_of(const llama_model* model);

class BackboneWeights {
 public:
  /// Loads `gguf_path` (mmap) where params.device and params.gpu_layers say, repacked as
  /// params.weight_repacking says (model_params). `kv_overrides` (terminated by an
  /// entry with an empty key, or empty) replace GGUF metadata at load. Throws clef::Error
  /// (model_error) when the file cannot be loaded or is not a qwen35 backbone.
  static std::shared_ptr<const BackboneWeights> load(
      const std::string& gguf_path, const BackboneParams& params,
      std::span<const llama_model_kv_override> kv_overrides = {});

  /// The llama_model_params clef loads a backbone with (mmap, gpu_layers, weight repacking,
  /// `kv_overrides`, progress callback). `params` and `kv_overrides` must outlive the load.
  static llama_model_params model_params(const BackboneParams& params,
                                         std::span<const llama_model_kv_override> kv_overrides);

  /// Takes an already loaded model (e.g. a layout B/C file loaded by artifact::load_backbone),
  /// loaded with `params`' placement; `name` is used in messages. Throws clef::Error
  /// (model_error) for a model that is not a qwen35 backbone, std::invalid_argument for null.
  BackboneWeights(LlamaModelPtr model, const BackboneParams& params, std::string name);

  /// The llama_model (llama.cpp's API takes it non-const to make a context on it; nothing clef
  /// does through it changes the weights).
  llama_model* model() const noexcept { return model_.get(); }
  const llama_vocab* vocab() const noexcept;
  /// The vocabulary, sharing ownership of the weights: valid as long as a share is held.
  std::shared_ptr<const llama_vocab> shared_vocab() const;
  const std::string& name() const noexcept { return name_; }  ///< the file, for messages
  int n_embd() const noexcept { return n_embd_; }
  bool mrope() const noexcept { return mrope_; }  ///< (I)M-RoPE: four positions per embedding

  /// Throws clef::Error (invalid_request naming the parameter) when a context of `params` cannot
  /// run on these weights: another device, GPU layer count or weight repacking than they were
  /// loaded with (those are the weights', not a context's).
  void check_context_params(const BackboneParams& params) const;

 private:
  std::shared_ptr<llama_model> model_;
  BackboneParams placement_;  ///< what the weights were loaded with (device, layers, repacking)
  std::string name_;
  int n_embd_ = 0;
  bool mrope_ = false;
};

}  // namespace clef::backbone
