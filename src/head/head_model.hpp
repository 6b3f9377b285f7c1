#pragma once
// clef::head::HeadModel: the joint schema head's parameters as ggml tensors in one backend
// buffer, uploaded once at load time.

#include <ggml-cpp.h>
#include <ggml.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "head/head_graph_ops.hpp"
#include "head/head_weights.hpp"

namespace clef::head {

/// One evidence routing layer (`evidence_layers.i`).
struct EvidenceLayerTensors {
  LayerNormTensors query_norm, memory_norm, feedforward_norm;
  AttentionTensors attention;
  LinearTensors feedforward_in, feedforward_out;  ///< feedforward.0 / feedforward.3
};

/// One field decoder layer (`layers.i`, nn.TransformerDecoderLayer, norm_first).
struct DecoderLayerTensors {
  AttentionTensors self_attn, cross_attn;  ///< self_attn / multihead_attn
  LinearTensors linear1, linear2;
  LayerNormTensors norm1, norm2, norm3;
};

/// All head tensors, ggml layout (see head_graph_ops.hpp), plus two derived constants.
/// With `scales_folded`, the three scalar tensors hold FoldedScales (prior and joint multipliers,
/// gate value) and the forward applies them as they are; otherwise they hold the raw torch
/// parameters and the forward computes exp(min(., ln 100)) and sigmoid.
struct HeadTensors {
  bool scales_folded = false;
  ggml_tensor* prior_logit_scale = nullptr;  ///< [1] raw, or the folded prior multiplier
  ggml_tensor* joint_logit_scale = nullptr;  ///< [1] raw, or the folded joint multiplier
  ggml_tensor* residual_gate = nullptr;      ///< [1] raw, or the folded gate value
  LayerNormTensors hidden_norm;
  LinearTensors memory_projection, question_projection, option_question_projection,
      global_projection, option_context_projection, option_lexical_projection;  ///< no bias
  ggml_tensor* type_embedding = nullptr;                                        ///< [E, 3]
  std::vector<EvidenceLayerTensors> evidence_layers;
  LayerNormTensors option_summary_norm;
  std::vector<DecoderLayerTensors> layers;
  LayerNormTensors field_norm, option_norm;
  LinearTensors residual_in, residual_out;  ///< residual_scorer.0 / residual_scorer.3
  ggml_tensor* sqrt_head_dim = nullptr;     ///< [1] f32(sqrt(width / heads))
  ggml_tensor* sqrt_width = nullptr;        ///< [1] f32(sqrt(width))
};

/// Owns the ggml context describing the head's tensors and the backend buffer holding them.
class HeadModel {
 public:
  /// Creates every tensor of `weights` on `backend` and uploads the f32 values.
  /// Throws clef::Error (internal) if the backend cannot allocate the buffer.
  HeadModel(const HeadWeights& weights, ggml_backend_t backend);

  /// Every tensor of a head of `config` (raw scalars) on `backend`, zero: for weights uploaded
  /// afterwards tensor by tensor (a training run reads its head from a file so). Throws as above.
  HeadModel(const HeadConfig& config, ggml_backend_t backend);

  const HeadConfig& config() const noexcept { return config_; }
  const HeadTensors& tensors() const noexcept { return tensors_; }

  /// One parameter tensor and its torch state_dict name.
  struct NamedTensor {
    std::string name;
    ggml_tensor* tensor = nullptr;
  };
  /// Every parameter in head_parameter_specs order (the three scalars hold folded values when
  /// the weights were folded), not the derived constants.
  const std::vector<NamedTensor>& parameters() const noexcept { return parameters_; }

 private:
  /// The tensors of `config` (the scalars' places holding folded values when `folded`),
  /// allocated on `backend` (the derived constants not yet set: set_constants); by name.
  std::map<std::string, ggml_tensor*, std::less<>> create(bool folded, ggml_backend_t backend);
  /// Uploads the derived constants (f32 sqrt of the head and model widths).
  void set_constants();

  HeadConfig config_;
  ggml_context_ptr ctx_;
  ggml_backend_buffer_ptr buffer_;
  HeadTensors tensors_;
  std::vector<NamedTensor> parameters_;
};

}  // namespace clef::head
