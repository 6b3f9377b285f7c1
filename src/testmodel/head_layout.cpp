#include "testmodel/head_layout.hpp"

namespace clef::testmodel {

std::vector<HeadParam> head_parameters(const HeadConfig& c) {
  const std::int64_t H = c.hidden_size;
  const std::int64_t W = c.width;
  const std::int64_t F = c.feedforward;
  std::vector<HeadParam> out;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, HeadParamRole role) {
    out.push_back({std::move(name), std::move(shape), role});
  };
  auto layer_norm = [&](const std::string& prefix, std::int64_t n) {
    add(prefix + ".weight", {n}, HeadParamRole::norm_weight);
    add(prefix + ".bias", {n}, HeadParamRole::bias);
  };
  auto linear = [&](const std::string& prefix, std::int64_t out_dim, std::int64_t in_dim) {
    add(prefix + ".weight", {out_dim, in_dim}, HeadParamRole::matrix);
    add(prefix + ".bias", {out_dim}, HeadParamRole::bias);
  };
  auto mha = [&](const std::string& prefix) {  // torch nn.MultiheadAttention, packed in_proj
    add(prefix + ".in_proj_weight", {3 * W, W}, HeadParamRole::matrix);
    add(prefix + ".in_proj_bias", {3 * W}, HeadParamRole::bias);
    linear(prefix + ".out_proj", W, W);
  };

  add("prior_logit_scale", {}, HeadParamRole::scalar);
  add("joint_logit_scale", {}, HeadParamRole::scalar);
  add("residual_gate", {}, HeadParamRole::scalar);
  layer_norm("hidden_norm", H);
  for (const char* name :
       {"memory_projection", "question_projection", "option_question_projection",
        "global_projection", "option_context_projection", "option_lexical_projection"}) {
    add(std::string(name) + ".weight", {W, H}, HeadParamRole::matrix);
  }
  add("type_embedding.weight", {3, W}, HeadParamRole::type_embedding);
  for (std::uint32_t i = 0; i < c.routing_layers; ++i) {
    const std::string p = "evidence_layers." + std::to_string(i);
    layer_norm(p + ".query_norm", W);
    layer_norm(p + ".memory_norm", W);
    mha(p + ".attention");
    layer_norm(p + ".feedforward_norm", W);
    linear(p + ".feedforward.0", F, W);
    linear(p + ".feedforward.3", W, F);
  }
  layer_norm("option_summary_norm", W);
  for (std::uint32_t i = 0; i < c.layers; ++i) {  // torch TransformerDecoderLayer
    const std::string p = "layers." + std::to_string(i);
    mha(p + ".self_attn");
    mha(p + ".multihead_attn");
    linear(p + ".linear1", F, W);
    linear(p + ".linear2", W, F);
    layer_norm(p + ".norm1", W);
    layer_norm(p + ".norm2", W);
    layer_norm(p + ".norm3", W);
  }
  layer_norm("field_norm", W);
  layer_norm("option_norm", W);
  linear("residual_scorer.0", W, 4 * W);
  linear("residual_scorer.3", 1, W);
  return out;
}

}  // namespace clef::testmodel
