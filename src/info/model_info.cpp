#include "info/model_info.hpp"

#include <cstdio>
#include <sstream>

#include "artifact/layout.hpp"
#include "artifact/open_model.hpp"
#include "artifact/reference.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace clef::info {

namespace {

std::string human_size(std::uintmax_t bytes) {
  return std::to_string(bytes) + " bytes (" + util::human_bytes(bytes) + ")";
}

/// "[a, b, c]" of any sized range of numbers.
template <class Numbers>
std::string list(const Numbers& v) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

/// "G G G A G G G A": G = Gated DeltaNet, A = full attention.
std::string pattern(const std::vector<bool>& recurrent) {
  std::string s;
  for (std::size_t i = 0; i < recurrent.size(); ++i) {
    if (i) s += ' ';
    s += recurrent[i] ? 'G' : 'A';
  }
  return s;
}

/// HeadInfo of a head read from inside a GGUF (weights == config_path == the GGUF).
HeadInfo head_info_in_gguf(const artifact::OpenedModel& m) {
  HeadInfo h;
  h.weights = m.paths.gguf;
  h.config_path = m.paths.gguf;
  h.config = m.head.config();
  for (const gguf::TensorRef& t : gguf::GgufFile(m.paths.gguf).tensors()) {
    for (const auto& prefix : m.backbone.head_tensor_prefixes) {
      if (t.name.starts_with(prefix)) {
        h.dtypes.insert(ggml_type_name(t.type));
        ++h.n_tensors;
        break;
      }
    }
  }
  for (const auto& [name, t] : m.head.tensors()) h.n_params += t.values.size();
  if (m.head.folded_scales()) h.n_params += 3;
  return h;
}

/// Differences of a joint_head.safetensors head from the published one nearest its config
/// (artifact::config_differences), and a dtype other than the releases' BF16.
std::vector<std::string> reference_differences(const HeadInfo& h) {
  std::vector<std::string> out = artifact::config_differences(h.config);
  if (h.dtypes != std::set<std::string>{"BF16"}) {
    std::string d;
    for (const auto& t : h.dtypes) d += (d.empty() ? "" : ", ") + t;
    out.push_back("joint_head.safetensors dtype " + d + " (reference BF16)");
  }
  return out;
}

}  // namespace

ModelReport inspect_files(const ModelFiles& files) {
  ModelReport r;
  std::optional<gguf::GgufFile> backbone;
  if (files.backbone) {
    backbone.emplace(*files.backbone);
    r.backbone = read_backbone_info(*backbone);
  }
  if (files.mmproj) {
    // The mmproj's header only, as always: mtmd checks its tensor data when it loads it.
    r.mmproj = read_mmproj_info(gguf::GgufFile(*files.mmproj, /*header_only=*/true));
    r.warnings.insert(r.warnings.end(), r.mmproj->warnings.begin(), r.mmproj->warnings.end());
  }
  if (backbone) {
    const artifact::Layout layout = artifact::detect_layout(*backbone);
    r.layout = artifact::layout_description(layout);
    if (layout != artifact::Layout::hf_head) {
      const artifact::OpenedModel opened =
          artifact::open_model({*files.backbone, files.mmproj, files.head, files.head_config});
      r.head = head_info_in_gguf(opened);
      r.differences = opened.differences;
    }
  }
  if (files.head && !r.head) {
    r.head = read_head_info(*files.head, *files.head_config);
    r.differences = reference_differences(*r.head);
  }
  if (r.backbone && r.head && r.head->config.hidden_size != r.backbone->n_embd) {
    throw model_error("head hidden_size " + std::to_string(r.head->config.hidden_size) + " (" +
                      r.head->config_path.string() + ") does not match the backbone's n_embd " +
                      std::to_string(r.backbone->n_embd) + " (" + r.backbone->path.string() + ")");
  }
  if (r.backbone && r.mmproj && r.mmproj->output_dim != r.backbone->n_embd) {
    throw model_error("mmproj output dim " + std::to_string(r.mmproj->output_dim) + " (" +
                      r.mmproj->path.string() + ") does not match the backbone's n_embd " +
                      std::to_string(r.backbone->n_embd));
  }
  if (r.backbone && !r.mmproj) r.warnings.push_back("no mmproj: images are not supported");
  if (r.backbone && !r.head) r.warnings.push_back("no joint schema head: clef cannot decide");
  if (r.head && r.differences.empty()) r.differences.push_back("none");
  return r;
}

ModelReport inspect_model(const std::vector<std::filesystem::path>& paths) {
  return inspect_files(classify_model_files(paths));
}

std::string format_report(const ModelReport& r) {
  std::ostringstream s;
  if (!r.layout.empty()) s << "layout " << r.layout << "\n";
  if (r.backbone) {
    const BackboneInfo& b = *r.backbone;
    std::size_t n_attn = 0;
    for (bool rec : b.recurrent) n_attn += rec ? 0 : 1;
    s << "backbone " << b.path.string() << "\n";
    s << "  arch                " << b.arch << (b.name.empty() ? "" : "  (" + b.name + ")") << "\n";
    s << "  layers              " << b.n_layer << " (" << b.n_layer - n_attn << " Gated DeltaNet, "
      << n_attn << " full attention";
    if (b.full_attention_interval) s << ", full_attention_interval " << *b.full_attention_interval;
    if (b.n_layer_nextn) s << ", +" << b.n_layer_nextn << " MTP";
    s << ")\n";
    s << "  pattern             " << pattern(b.recurrent) << "  (G = DeltaNet, A = attention)\n";
    s << "  n_embd              " << b.n_embd << "\n";
    s << "  vocab               " << b.n_vocab << " tokens (" << b.tokenizer_model << ", pre "
      << b.tokenizer_pre << ")\n";
    s << "  context length      " << b.n_ctx_train << "\n";
    s << "  attention           " << b.n_head << " heads / " << b.n_head_kv
      << " KV heads, head dim " << b.head_dim << ", n_rot " << b.n_rot << "\n";
    s << "  rope sections       [" << b.rope_sections[0] << ", " << b.rope_sections[1] << ", "
      << b.rope_sections[2] << ", " << b.rope_sections[3] << "] (interleaved M-RoPE), freq base "
      << b.rope_freq_base << "\n";
    s << "  Gated DeltaNet      " << b.ssm_group_count << " key heads, " << b.ssm_time_step_rank
      << " value heads, head dim " << b.ssm_state_size << ", conv kernel " << b.ssm_conv_kernel
      << "\n";
    s << "  feed-forward        " << b.n_ff << "\n";
    s << "  output.weight       untied, " << ggml_type_name(b.output_type) << "\n";
    s << "  tensors             " << b.n_tensors << ":";
    for (const auto& [type, count] : b.tensor_types) s << " " << type << " x" << count;
    s << "\n  file size           " << human_size(b.file_size) << "\n";
  }
  if (r.mmproj) {
    const MmprojInfo& m = *r.mmproj;
    s << "mmproj " << m.path.string() << "\n";
    const vision::MmprojInfo& v = m.vision;
    s << "  projector type      " << v.projector_type << "\n";
    s << "  image size          " << m.image_size << "\n";
    s << "  patch size          " << v.processor.patch_size << "\n";
    s << "  merge size          " << v.processor.merge_size << "\n";
    s << "  vision tower        " << m.n_layer << " layers, n_embd " << v.n_embd << ", " << v.n_head
      << " heads, feed-forward " << m.n_ff << ", deepstack layers " << m.n_deepstack << "\n";
    s << "  projection dim      " << v.projection_dim << " (output rows " << m.output_dim << ")\n";
    s << "  image mean / std    " << list(v.image_mean) << " / " << list(v.image_std) << "\n";
    s << "  min / max pixels    "
      << (v.file_min_pixels ? std::to_string(*v.file_min_pixels) : std::string("(not set)"))
      << " / "
      << (v.file_max_pixels ? std::to_string(*v.file_max_pixels) : std::string("(not set)"))
      << "\n";
    s << "  tensors             " << m.n_tensors << "\n";
    s << "  file size           " << human_size(m.file_size) << "\n";
  }
  if (r.head) {
    const HeadInfo& h = *r.head;
    const auto& c = h.config;
    if (h.config_path == h.weights) {
      s << "head inside " << h.weights.string() << "\n";
    } else {
      s << "head " << h.weights.string() << "\n";
      s << "  config              " << h.config_path.string() << "\n";
    }
    s << "  hidden_size         " << c.hidden_size << "\n";
    s << "  width               " << c.width << "\n";
    s << "  routing_layers      " << c.routing_layers << "\n";
    s << "  layers              " << c.layers << "\n";
    s << "  heads               " << c.heads << "\n";
    s << "  feedforward         " << c.feedforward << "\n";
    s << "  dtype               ";
    bool first = true;
    for (const auto& d : h.dtypes) {
      s << (first ? "" : ", ") << d;
      first = false;
    }
    s << "\n  tensors             " << h.n_tensors << " (names and shapes match the config)\n";
    s << "  parameters          " << h.n_params << "\n";
    if (h.config_path != h.weights)
      s << "  file size           " << human_size(h.file_size) << "\n";
    if (!h.identity.empty()) s << "  identity            " << h.identity << "\n";
    const artifact::HeadMatch match = artifact::match_published_head(c);
    s << "  published config    " << artifact::describe_head_config(match) << "\n";
    s << "  differences from " << match.head->model << "'s published head:\n";
    for (const auto& d : r.differences) s << "    " << d << "\n";
  }
  for (const auto& w : r.warnings) s << "warning: " << w << "\n";
  return s.str();
}

}  // namespace clef::info
