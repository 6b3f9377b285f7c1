#include "artifact/head_names.hpp"

#include <map>
#include <optional>
#include <stdexcept>

#include "head/head_parameters.hpp"

namespace clef::artifact {

namespace {

/// torch module path -> layout B tensor prefix for one evidence routing layer (block b).
const std::map<std::string, std::string, std::less<>>& evidence_map() {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"query_norm", "cross_attn_norm"}, {"memory_norm", "cross_attn_norm_kv"},
      {"attention", "cross_attn"},       {"attention.out_proj", "cross_attn_o"},
      {"feedforward_norm", "ffn_norm"},  {"feedforward.0", "ffn_up"},
      {"feedforward.3", "ffn_down"},
  };
  return m;
}

/// torch module path -> layout B tensor prefix for one field decoder layer.
const std::map<std::string, std::string, std::less<>>& decoder_map() {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"norm1", "attn_norm"},
      {"self_attn", "attn"},
      {"self_attn.out_proj", "attn_o"},
      {"norm2", "cross_attn_norm"},
      {"multihead_attn", "cross_attn"},
      {"multihead_attn.out_proj", "cross_attn_o"},
      {"norm3", "ffn_norm"},
      {"linear1", "ffn_up"},
      {"linear2", "ffn_down"},
  };
  return m;
}

/// Top-level torch module -> layout B name (without the .weight/.bias suffix).
const std::map<std::string, std::string, std::less<>>& top_map() {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"hidden_norm", "decision.hidden_norm"},
      {"memory_projection", "decision.proj_memory"},
      {"question_projection", "decision.proj_question"},
      {"option_question_projection", "decision.proj_option_question"},
      {"global_projection", "decision.proj_global"},
      {"option_context_projection", "decision.proj_option_context"},
      {"option_lexical_projection", "decision.proj_option_lexical"},
      {"type_embedding", "token_types"},
      {"option_summary_norm", "decision.option_summary_norm"},
      {"field_norm", "decision.field_norm"},
      {"option_norm", "decision.option_norm"},
      {"residual_scorer.0", "decision.scorer"},
      {"residual_scorer.3", "decision.scorer_out"},
  };
  return m;
}

/// `module` + `leaf` ("weight", "bias", "in_proj_weight", "in_proj_bias") in block `prefix`.
GgufHeadName block_name(const std::string& torch, const std::string& prefix,
                        const std::string& module, const std::string& leaf) {
  if (leaf == "in_proj_weight" || leaf == "in_proj_bias") {
    const std::string suffix = leaf == "in_proj_weight" ? ".weight" : ".bias";
    return {torch,
            {prefix + module + "_q" + suffix, prefix + module + "_k" + suffix,
             prefix + module + "_v" + suffix}};
  }
  return {torch, {prefix + module + "." + leaf}};
}

/// Splits "a.b.c.weight" into ("a.b.c", "weight").
std::pair<std::string, std::string> split_leaf(const std::string& s) {
  const auto dot = s.rfind('.');
  return {s.substr(0, dot), s.substr(dot + 1)};
}

/// Layout B name(s) of one torch parameter other than the scalars; nullopt if unknown.
std::optional<GgufHeadName> map_one(const std::string& name, const head::HeadConfig& config) {
  const auto [module, leaf] = split_leaf(name);
  for (const auto& [kind, map] : {std::pair{std::string("evidence_layers."), &evidence_map()},
                                  std::pair{std::string("layers."), &decoder_map()}}) {
    if (!name.starts_with(kind)) continue;
    const std::string rest = name.substr(kind.size());  // "i.module.leaf"
    const auto dot = rest.find('.');
    const std::int64_t index = std::stoll(rest.substr(0, dot));
    const std::int64_t block = kind == "layers." ? config.routing_layers + index : index;
    const std::string sub = module.substr(kind.size() + dot + 1);  // the module inside the layer
    const auto it = map->find(sub);
    if (it == map->end()) return std::nullopt;
    return block_name(name, "dec.blk." + std::to_string(block) + ".", it->second, leaf);
  }
  const auto it = top_map().find(module);
  if (it == top_map().end()) return std::nullopt;
  return GgufHeadName{name, {it->second + "." + leaf}};
}

}  // namespace

std::vector<GgufHeadName> llama_cpp_head_names(const head::HeadConfig& config) {
  std::vector<GgufHeadName> out;
  for (const auto& spec : head::head_parameter_specs(config)) {
    if (spec.name.find('.') == std::string::npos) continue;  // the three scalars
    auto mapped = map_one(spec.name, config);
    if (!mapped) {
      throw std::logic_error("no layout B name for head parameter " + spec.name);
    }
    out.push_back(std::move(*mapped));
  }
  return out;
}

bool is_llama_cpp_head_tensor(std::string_view name) {
  return name.starts_with("dec.") || name.starts_with("decision.") ||
         name.starts_with("token_types.");
}

}  // namespace clef::artifact
