#include "backbone/backbone_weights.hpp"

#include <stdexcept>
#include <utility>

#include "backbone/backbone.hpp"
#include "util/error.hpp"

namespace clef::backbone {

std::shared_ptr<const BackboneWeights> BackboneWeights::load(
    const std::string& gguf_path, const BackboneParams& params,
    std::span<const llama_model_kv_override> kv_overrides) {
  validate(params);
  ensure_llama_backend();
  const llama_model_params mp = model_params(params, kv_overrides);
  LlamaModelPtr model(llama_model_load_from_file(gguf_path.c_str(), mp));
  if (!model) throw model_error("cannot load backbone GGUF '" + gguf_path + "' (see log above)");
  return std::make_shared<const BackboneWeights>(std::move(model), params, gguf_path);
}

BackboneWeights::BackboneWeights(LlamaModelPtr model, const BackboneParams& params,
                                 std::string name)
    : placement_(params), name_(std::move(name)) {
  if (!model) throw std::invalid_argument("BackboneWeights: null model");
  placement_.on_progress = {};  // only the load reads it
  model_ = std::move(model);
  const std::string arch = architecture_of(model_.get());
  if (arch != "qwen35") {
    throw model_error("backbone '" + name_ + "' has architecture '" + arch +
                      "'; clef needs a qwen35 backbone");
  }
  n_embd_ = llama_model_n_embd(model_.get());
  const llama_rope_type rope = llama_model_rope_type(model_.get());
  mrope_ = rope == LLAMA_ROPE_TYPE_MROPE || rope == LLAMA_ROPE_TYPE_IMROPE;
}

std::string architecture_of(const llama_model* model) {
  char arch[64] = {0};
  llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);
  return arch;
}

const llama_vocab* BackboneWeights::vocab() const noexcept {
  return llama_model_get_vocab(model_.get());
}

std::shared_ptr<const llama_vocab> BackboneWeights::shared_vocab() const {
  return {model_, vocab()};  // the aliasing constructor: owns the model, points at its vocabulary
}

void BackboneWeights::check_context_params(const BackboneParams& params) const {
  const auto differs = [&](const char* name, const std::string& here, const std::string& there) {
    throw invalid_request(std::string("a context with ") + name + " " + here + " on backbone '" +
                              name_ + "' loaded with " + name + " " + there +
                              " (the weights' placement; load them again to change it)",
                          name);
  };
  if (params.device != placement_.device) differs("device", params.device, placement_.device);
  if (params.gpu_layers != placement_.gpu_layers) {
    differs("gpu_layers", std::to_string(params.gpu_layers), std::to_string(placement_.gpu_layers));
  }
  if (params.weight_repacking != placement_.weight_repacking) {
    differs("weight_repacking", params.weight_repacking ? "on" : "off",
            placement_.weight_repacking ? "on" : "off");
  }
}

}  // namespace clef::backbone
