#include "artifact/gguf_head.hpp"

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "artifact/head_names.hpp"
#include "artifact/reference.hpp"
#include "head/head_parameters.hpp"
#include "util/error.hpp"

namespace clef::artifact {

namespace {

/// ggml ne of a torch shape: reversed, padded with 1 ([] -> [1]).
std::array<std::int64_t, 4> ne_of(const std::vector<std::int64_t>& shape) {
  std::array<std::int64_t, 4> ne{1, 1, 1, 1};
  for (std::size_t i = 0; i < shape.size() && i < 4; ++i) ne[i] = shape[shape.size() - 1 - i];
  return ne;
}

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 5) s += " and " + std::to_string(names.size() - 5) + " more";
  return s;
}

/// Reads one tensor that must exist with ggml shape `ne`; counts its type in `types`.
class TensorReader {
 public:
  TensorReader(const gguf::GgufFile& g, std::span<const std::byte> file) : g_(g), file_(file) {}

  std::vector<float> read(const std::string& name, const std::array<std::int64_t, 4>& ne,
                          const std::string& torch) {
    const auto t = g_.tensor(name);
    if (!t) {
      throw model_error(g_.path().string() + ": the joint schema head tensor " + name + " (" +
                        torch + ") is missing");
    }
    if (t->ne != ne) {
      throw model_error(g_.path().string() + ": head tensor " + name + " has shape " +
                        gguf::ne_string(t->ne) + " but the head config needs " +
                        gguf::ne_string(ne) + " (" + torch + ")");
    }
    std::string type = ggml_type_name(t->type);
    for (char& ch : type) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    ++types_[type];
    seen_.insert(name);
    return tensor_to_f32(*t, file_);
  }
  const std::map<std::string, int>& types() const { return types_; }
  const std::set<std::string>& seen() const { return seen_; }

 private:
  const gguf::GgufFile& g_;
  std::span<const std::byte> file_;
  std::map<std::string, int> types_;
  std::set<std::string> seen_;
};

std::int64_t require_uint(const gguf::GgufFile& g, const std::string& key) {
  const auto v = g.get_uint(key);
  if (!v) throw model_error(g.path().string() + ": missing key " + key + " (head config)");
  return static_cast<std::int64_t>(*v);
}

/// "12 BF16, 3 F32" -> "head tensor types: ..."
std::string types_line(const std::map<std::string, int>& types) {
  std::string s = "head tensor types:";
  const char* sep = " ";
  for (const auto& [name, n] : types) {
    s.append(sep).append(std::to_string(n)).append(" ").append(name);
    sep = ", ";
  }
  return s;
}

/// Refuses tensors in the head namespace that the config does not expect.
void refuse_extra(const gguf::GgufFile& g, const std::set<std::string>& seen,
                  bool (*in_head)(const std::string&)) {
  std::vector<std::string> extra;
  for (const auto& t : g.tensors()) {
    if (in_head(t.name) && !seen.contains(t.name)) extra.push_back(t.name);
  }
  if (!extra.empty()) {
    throw model_error(g.path().string() + ": unexpected tensors in the joint schema head: " +
                      list(extra) + " (the head config does not have them)");
  }
}

}  // namespace

std::vector<float> tensor_to_f32(const gguf::TensorRef& t, std::span<const std::byte> file) {
  if (t.offset + t.bytes > file.size()) {
    throw model_error("tensor " + t.name + " lies outside the file");
  }
  const std::int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
  std::vector<float> out(static_cast<std::size_t>(n));
  const std::byte* src = file.data() + t.offset;
  if (t.type == GGML_TYPE_F32) {
    std::memcpy(out.data(), src, out.size() * sizeof(float));
    return out;
  }
  const auto* traits = ggml_get_type_traits(t.type);
  if (traits == nullptr || traits->to_float == nullptr) {
    throw model_error("tensor " + t.name + " has type " + ggml_type_name(t.type) +
                      ", which clef cannot dequantize");
  }
  traits->to_float(src, out.data(), n);
  return out;
}

GgufHead read_llama_cpp_head(const gguf::GgufFile& g, std::span<const std::byte> file) {
  const std::string where = g.path().string();
  std::vector<std::string> diffs;
  head::HeadConfig c;
  c.hidden_size = require_uint(g, "clef.embedding_length");
  c.routing_layers = require_uint(g, "clef.decision.routing_block_count");
  c.layers = require_uint(g, "clef.decision.block_count");
  c.heads = require_uint(g, "clef.decision.head_count");
  const auto proj = g.tensor("decision.proj_memory.weight");
  if (!proj)
    throw model_error(where +
                      ": the joint schema head tensor decision.proj_memory.weight is missing");
  c.width = proj->ne[1];
  c.feedforward = 1;
  if (c.routing_layers + c.layers > 0) {
    const auto up = g.tensor("dec.blk.0.ffn_up.weight");
    if (!up)
      throw model_error(where +
                        ": the joint schema head tensor dec.blk.0.ffn_up.weight is missing");
    c.feedforward = up->ne[1];
  }
  head::validate_head_config(c, where);
  if (const auto eps = g.get_float("clef.attention.layer_norm_epsilon")) {
    if (std::fabs(*eps - kHeadLayerNormEps) > 1e-12) {
      throw model_error(where + ": clef.attention.layer_norm_epsilon is " + std::to_string(*eps) +
                        "; the joint schema head uses LayerNorm eps 1e-5");
    }
  } else {
    diffs.push_back(
        "no clef.attention.layer_norm_epsilon key (early converter draft); eps 1e-5 used");
  }

  TensorReader reader(g, file);
  head::HeadWeights::TensorMap tensors;
  std::map<std::string, std::vector<std::int64_t>, std::less<>> shapes;
  for (const auto& s : head::head_parameter_specs(c)) shapes.emplace(s.name, s.shape);
  for (const auto& name : llama_cpp_head_names(c)) {
    const std::vector<std::int64_t>& shape = shapes.at(name.torch);
    if (name.gguf.size() == 1) {
      tensors.emplace(name.torch,
                      head::HeadTensor{shape, reader.read(name.gguf[0], ne_of(shape), name.torch)});
      continue;
    }
    // A packed in_proj: q, k, v each a third of the rows.
    std::vector<std::int64_t> part = shape;
    part[0] /= 3;
    std::vector<float> packed;
    packed.reserve(static_cast<std::size_t>(shape[0]) * (shape.size() > 1 ? shape[1] : 1));
    for (const auto& piece : name.gguf) {
      const auto v = reader.read(piece, ne_of(part), name.torch);
      packed.insert(packed.end(), v.begin(), v.end());
    }
    tensors.emplace(name.torch, head::HeadTensor{shape, std::move(packed)});
  }
  const std::vector<float> scales =
      reader.read(std::string(kScalesTensor), {3, 1, 1, 1},
                  "prior_logit_scale, joint_logit_scale, residual_gate");
  const head::FoldedScales folded{scales[0], scales[1], scales[2]};
  const auto multiplier_ok = [](float v) { return std::isfinite(v) && v > 0.0f && v <= 100.0f; };
  if (!multiplier_ok(folded.prior) || !multiplier_ok(folded.joint) || !(folded.gate >= 0.0f) ||
      !(folded.gate <= 1.0f)) {
    throw model_error(where + ": decision.scales [" + std::to_string(folded.prior) + ", " +
                      std::to_string(folded.joint) + ", " + std::to_string(folded.gate) +
                      "] are not folded scales (exp(min(a, ln 100)) in (0, 100] twice, then "
                      "sigmoid(g) in [0, 1])");
  }
  refuse_extra(g, reader.seen(), [](const std::string& n) { return is_llama_cpp_head_tensor(n); });

  diffs.push_back(types_line(reader.types()) + " (reference joint_head.safetensors: all BF16)");
  diffs.push_back("scalars folded into decision.scales = [" + std::to_string(folded.prior) + ", " +
                  std::to_string(folded.joint) + ", " + std::to_string(folded.gate) +
                  "], used as multipliers");
  diffs.push_back("in_proj stored as split q/k/v; field decoder layers are dec.blk." +
                  std::to_string(c.routing_layers) + ".." +
                  std::to_string(c.routing_layers + c.layers - 1));
  for (const auto& key : g.keys()) {
    if (key.starts_with("clef.decision.temperature.")) {
      diffs.push_back("key " + key + " ignored (the reference applies no temperature)");
    }
  }
  GgufHead out{head::HeadWeights::from_tensors(c, std::move(tensors), folded, where, c.hidden_size),
               {}};
  for (auto& d : config_differences(c)) out.differences.push_back(std::move(d));
  for (auto& d : diffs) out.differences.push_back(std::move(d));
  return out;
}

GgufHead read_torch_named_head(const gguf::GgufFile& g, std::span<const std::byte> file,
                               Layout layout) {
  const std::string where = g.path().string();
  const std::string key_prefix = layout == Layout::ollama ? "qwen35.decision." : "clef.";
  head::HeadConfig c;
  c.hidden_size = require_uint(g, key_prefix + "hidden_size");
  c.width = require_uint(g, key_prefix + "width");
  c.routing_layers = require_uint(g, key_prefix + "routing_layers");
  c.layers = require_uint(g, key_prefix + "layers");
  c.heads = require_uint(g, key_prefix + "heads");
  c.feedforward = require_uint(g, key_prefix + "feedforward");
  head::validate_head_config(c, where);

  TensorReader reader(g, file);
  head::HeadWeights::TensorMap tensors;
  std::vector<std::string> diffs;
  for (const auto& s : head::head_parameter_specs(c)) {
    const std::string name = std::string(kTorchPrefix) + s.name;
    tensors.emplace(s.name, head::HeadTensor{s.shape, reader.read(name, ne_of(s.shape), s.name)});
  }
  refuse_extra(g, reader.seen(), [](const std::string& n) { return n.starts_with(kTorchPrefix); });
  diffs.push_back(types_line(reader.types()) +
                  (layout == Layout::ollama ? " (Ollama's converter writes all F32)"
                                            : " (reference joint_head.safetensors: all BF16)"));
  // The head's hidden size must be the backbone's (qwen35.embedding_length).
  const auto n_embd = g.get_uint("qwen35.embedding_length");
  GgufHead out{
      head::HeadWeights::from_tensors(
          c, std::move(tensors), std::nullopt, where,
          n_embd ? std::optional<std::int64_t>(static_cast<std::int64_t>(*n_embd)) : std::nullopt),
      {}};
  for (auto& d : config_differences(c)) out.differences.push_back(std::move(d));
  for (auto& d : diffs) out.differences.push_back(std::move(d));
  return out;
}

}  // namespace clef::artifact
