#include "head/head_model.hpp"

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include <cmath>
#include <map>
#include <string>

#include "head/head_parameters.hpp"
#include "util/error.hpp"

namespace clef::head {

namespace {

/// Looks tensors up by torch name while filling HeadTensors.
class Lookup {
 public:
  explicit Lookup(const std::map<std::string, ggml_tensor*, std::less<>>& t) : t_(t) {}
  ggml_tensor* operator()(const std::string& name) const {
    const auto it = t_.find(name);
    if (it == t_.end()) {
      throw Error(ErrorKind::internal, "internal", "head tensor \"" + name + "\" was not created");
    }
    return it->second;
  }
  LayerNormTensors norm(const std::string& p) const {
    return {(*this)(p + ".weight"), (*this)(p + ".bias")};
  }
  LinearTensors linear(const std::string& p) const {
    return {(*this)(p + ".weight"), (*this)(p + ".bias")};
  }
  LinearTensors projection(const std::string& p) const { return {(*this)(p + ".weight"), nullptr}; }
  AttentionTensors attention(const std::string& p) const {
    return {(*this)(p + ".in_proj_weight"), (*this)(p + ".in_proj_bias"), linear(p + ".out_proj")};
  }

 private:
  const std::map<std::string, ggml_tensor*, std::less<>>& t_;
};

}  // namespace

HeadModel::HeadModel(const HeadWeights& weights, ggml_backend_t backend)
    : config_(weights.config()) {
  const bool folded = weights.folded_scales().has_value();
  for (const auto& [name, t] : create(folded, backend)) {
    if (folded && (t == tensors_.prior_logit_scale || t == tensors_.joint_logit_scale ||
                   t == tensors_.residual_gate)) {
      continue;
    }
    const HeadTensor& src = weights.at(name);
    ggml_backend_tensor_set(t, src.values.data(), 0, src.values.size() * sizeof(float));
  }
  if (const auto& f = weights.folded_scales()) {
    ggml_backend_tensor_set(tensors_.prior_logit_scale, &f->prior, 0, sizeof(float));
    ggml_backend_tensor_set(tensors_.joint_logit_scale, &f->joint, 0, sizeof(float));
    ggml_backend_tensor_set(tensors_.residual_gate, &f->gate, 0, sizeof(float));
  }
  set_constants();
}

HeadModel::HeadModel(const HeadConfig& config, ggml_backend_t backend) : config_(config) {
  validate_head_config(config_, "the head's config");
  create(false, backend);
  ggml_backend_buffer_clear(buffer_.get(), 0);
  set_constants();
}

std::map<std::string, ggml_tensor*, std::less<>> HeadModel::create(bool folded,
                                                                   ggml_backend_t backend) {
  const auto specs = head_parameter_specs(config_);
  const std::size_t n_tensors = specs.size() + 2;
  ggml_init_params params{ggml_tensor_overhead() * n_tensors, nullptr, true};
  ctx_.reset(ggml_init(params));
  if (!ctx_) throw Error(ErrorKind::internal, "internal", "ggml_init failed for the head weights");

  std::map<std::string, ggml_tensor*, std::less<>> by_name;
  for (const auto& s : specs) {
    // Folded scales take the raw scalars' places (same [1] shape, other values).
    const bool scalar =
        s.name == kScalarNames[0] || s.name == kScalarNames[1] || s.name == kScalarNames[2];
    if (scalar && folded) {
      ggml_tensor* t = ggml_new_tensor_1d(ctx_.get(), GGML_TYPE_F32, 1);
      ggml_set_name(t, ("clef.folded." + s.name).c_str());
      by_name.emplace(s.name, t);
      parameters_.push_back({s.name, t});
      continue;
    }
    std::int64_t ne[4] = {1, 1, 1, 1};
    const int n_dims = s.shape.empty() ? 1 : static_cast<int>(s.shape.size());
    for (std::size_t i = 0; i < s.shape.size(); ++i) ne[i] = s.shape[s.shape.size() - 1 - i];
    ggml_tensor* t = ggml_new_tensor(ctx_.get(), GGML_TYPE_F32, n_dims, ne);
    ggml_set_name(t, s.name.c_str());
    by_name.emplace(s.name, t);
    parameters_.push_back({s.name, t});
  }
  const Lookup at(by_name);
  HeadTensors& w = tensors_;
  w.scales_folded = folded;
  w.prior_logit_scale = at("prior_logit_scale");
  w.joint_logit_scale = at("joint_logit_scale");
  w.residual_gate = at("residual_gate");
  w.hidden_norm = at.norm("hidden_norm");
  w.memory_projection = at.projection("memory_projection");
  w.question_projection = at.projection("question_projection");
  w.option_question_projection = at.projection("option_question_projection");
  w.global_projection = at.projection("global_projection");
  w.option_context_projection = at.projection("option_context_projection");
  w.option_lexical_projection = at.projection("option_lexical_projection");
  w.type_embedding = at("type_embedding.weight");
  for (std::int64_t i = 0; i < config_.routing_layers; ++i) {
    const std::string p = "evidence_layers." + std::to_string(i);
    w.evidence_layers.push_back({at.norm(p + ".query_norm"), at.norm(p + ".memory_norm"),
                                 at.norm(p + ".feedforward_norm"), at.attention(p + ".attention"),
                                 at.linear(p + ".feedforward.0"), at.linear(p + ".feedforward.3")});
  }
  w.option_summary_norm = at.norm("option_summary_norm");
  for (std::int64_t i = 0; i < config_.layers; ++i) {
    const std::string p = "layers." + std::to_string(i);
    w.layers.push_back({at.attention(p + ".self_attn"), at.attention(p + ".multihead_attn"),
                        at.linear(p + ".linear1"), at.linear(p + ".linear2"), at.norm(p + ".norm1"),
                        at.norm(p + ".norm2"), at.norm(p + ".norm3")});
  }
  w.field_norm = at.norm("field_norm");
  w.option_norm = at.norm("option_norm");
  w.residual_in = at.linear("residual_scorer.0");
  w.residual_out = at.linear("residual_scorer.3");
  w.sqrt_head_dim = ggml_new_tensor_1d(ctx_.get(), GGML_TYPE_F32, 1);
  ggml_set_name(w.sqrt_head_dim, "clef.sqrt_head_dim");
  w.sqrt_width = ggml_new_tensor_1d(ctx_.get(), GGML_TYPE_F32, 1);
  ggml_set_name(w.sqrt_width, "clef.sqrt_width");

  buffer_.reset(ggml_backend_alloc_ctx_tensors(ctx_.get(), backend));
  if (!buffer_) {
    throw Error(ErrorKind::internal, "internal",
                "cannot allocate the joint schema head's weights on backend " +
                    std::string(ggml_backend_name(backend)));
  }
  ggml_backend_buffer_set_usage(buffer_.get(), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  return by_name;
}

void HeadModel::set_constants() {
  // torch divides by math.sqrt(n) (a double) in f32 math: the divisor is f32(sqrt(n)).
  const float sqrt_d =
      static_cast<float>(std::sqrt(static_cast<double>(config_.width / config_.heads)));
  const float sqrt_e = static_cast<float>(std::sqrt(static_cast<double>(config_.width)));
  ggml_backend_tensor_set(tensors_.sqrt_head_dim, &sqrt_d, 0, sizeof(float));
  ggml_backend_tensor_set(tensors_.sqrt_width, &sqrt_e, 0, sizeof(float));
}

}  // namespace clef::head
