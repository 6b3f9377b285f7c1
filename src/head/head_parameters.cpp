#include "head/head_parameters.hpp"

namespace clef::head {

namespace {

void add_layer_norm(std::vector<ParamSpec>& out, const std::string& prefix, std::int64_t n) {
  out.push_back({prefix + ".weight", {n}});
  out.push_back({prefix + ".bias", {n}});
}

void add_linear(std::vector<ParamSpec>& out, const std::string& prefix, std::int64_t n_out,
                std::int64_t n_in) {
  out.push_back({prefix + ".weight", {n_out, n_in}});
  out.push_back({prefix + ".bias", {n_out}});
}

/// nn.MultiheadAttention: packed in_proj [3E, E] + bias, out_proj [E, E] + bias.
void add_attention(std::vector<ParamSpec>& out, const std::string& prefix, std::int64_t e) {
  out.push_back({prefix + ".in_proj_weight", {3 * e, e}});
  out.push_back({prefix + ".in_proj_bias", {3 * e}});
  add_linear(out, prefix + ".out_proj", e, e);
}

}  // namespace

std::vector<ParamSpec> head_parameter_specs(const HeadConfig& c) {
  const std::int64_t h = c.hidden_size;
  const std::int64_t e = c.width;
  const std::int64_t f = c.feedforward;
  std::vector<ParamSpec> out;
  out.push_back({"prior_logit_scale", {}});
  out.push_back({"joint_logit_scale", {}});
  out.push_back({"residual_gate", {}});
  add_layer_norm(out, "hidden_norm", h);
  for (const char* p :
       {"memory_projection", "question_projection", "option_question_projection",
        "global_projection", "option_context_projection", "option_lexical_projection"}) {
    out.push_back({std::string(p) + ".weight", {e, h}});
  }
  out.push_back({"type_embedding.weight", {3, e}});
  for (std::int64_t i = 0; i < c.routing_layers; ++i) {
    const std::string p = "evidence_layers." + std::to_string(i);
    add_layer_norm(out, p + ".query_norm", e);
    add_layer_norm(out, p + ".memory_norm", e);
    add_attention(out, p + ".attention", e);
    add_layer_norm(out, p + ".feedforward_norm", e);
    add_linear(out, p + ".feedforward.0", f, e);
    add_linear(out, p + ".feedforward.3", e, f);
  }
  add_layer_norm(out, "option_summary_norm", e);
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "layers." + std::to_string(i);
    add_attention(out, p + ".self_attn", e);
    add_attention(out, p + ".multihead_attn", e);
    add_linear(out, p + ".linear1", f, e);
    add_linear(out, p + ".linear2", e, f);
    add_layer_norm(out, p + ".norm1", e);
    add_layer_norm(out, p + ".norm2", e);
    add_layer_norm(out, p + ".norm3", e);
  }
  add_layer_norm(out, "field_norm", e);
  add_layer_norm(out, "option_norm", e);
  add_linear(out, "residual_scorer.0", e, 4 * e);
  add_linear(out, "residual_scorer.3", 1, e);
  return out;
}

}  // namespace clef::head
