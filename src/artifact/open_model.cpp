#include "artifact/open_model.hpp"

#include <algorithm>

#include "artifact/gguf_head.hpp"
#include "artifact/reference.hpp"
#include "gguf/gguf_file.hpp"
#include "head/safetensors.hpp"
#include "util/error.hpp"
#include "util/mapped_file.hpp"

namespace clef::artifact {

bool is_mmproj_name(const std::filesystem::path& p) {
  return p.filename().string().starts_with("mmproj");
}

namespace {

/// The backbone architecture's key prefix in the file.
std::string arch_prefix(Layout layout) {
  return layout == Layout::llama_cpp ? "clef." : "qwen35.";
}

BackboneSource backbone_source(const std::filesystem::path& gguf, Layout layout) {
  BackboneSource s;
  s.gguf = gguf;
  switch (layout) {
    case Layout::hf_head:
      break;
    case Layout::llama_cpp:
      s.loads_directly = false;
      s.rename_from = "clef.";
      s.drop_key_prefixes = {"clef.decision.", "clef.attention.layer_norm_epsilon"};
      s.head_tensor_prefixes = {"dec.", "decision.", "token_types."};
      break;
    case Layout::ollama:
      s.loads_directly = false;
      s.drop_key_prefixes = {"qwen35.decision."};
      s.head_tensor_prefixes = {"clef."};
      break;
    case Layout::bobcat:
      s.loads_directly = false;
      s.drop_key_prefixes = {"clef."};
      s.head_tensor_prefixes = {"clef."};
      break;
  }
  return s;
}

/// A dtype summary of a safetensors head ("all BF16", "F32").
std::string safetensors_dtypes(const std::filesystem::path& p) {
  const head::SafetensorsFile f(p);
  std::vector<std::string> names;
  for (const auto& t : f.tensors()) {
    const std::string n(head::dtype_name(t.dtype));
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

ModelPaths find_model_paths(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw model_error(dir.string() + ": no such directory");
  }
  std::vector<std::filesystem::path> models, mmprojs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".gguf") continue;
    (is_mmproj_name(entry.path()) ? mmprojs : models).push_back(entry.path());
  }
  std::sort(models.begin(), models.end());
  ModelPaths p;
  if (std::filesystem::is_regular_file(dir / "backbone.gguf")) {
    p.gguf = dir / "backbone.gguf";
  } else if (std::filesystem::is_regular_file(dir / "model.gguf")) {
    p.gguf = dir / "model.gguf";
  } else if (models.size() == 1) {
    p.gguf = models.front();
  } else if (models.empty()) {
    throw model_error(dir.string() + ": no model GGUF (backbone.gguf, model.gguf or one *.gguf)");
  } else {
    throw model_error(dir.string() + ": several model GGUF candidates (" + models[0].string() +
                      ", " + models[1].string() + ", ...): keep one or name it model.gguf");
  }
  if (mmprojs.size() > 1)
    throw model_error(dir.string() + ": several mmproj*.gguf files; keep one");
  if (mmprojs.size() == 1) p.mmproj = mmprojs.front();
  const auto weights = dir / head::HeadWeights::kWeightsFile;
  const auto config = dir / head::HeadWeights::kConfigFile;
  if (std::filesystem::is_regular_file(weights)) p.head_weights = weights;
  if (std::filesystem::is_regular_file(config)) p.head_config = config;
  return p;
}

OpenedModel open_model(const ModelPaths& paths) {
  const gguf::GgufFile g(paths.gguf);
  const Layout layout = detect_layout(g);
  const std::string where = paths.gguf.string();
  const auto n_embd = g.get_uint(arch_prefix(layout) + "embedding_length");
  if (!n_embd) throw model_error(where + ": no " + arch_prefix(layout) + "embedding_length key");
  if (!g.tensor("output.weight")) {
    throw model_error(where +
                      ": no output.weight: the LM head is tied to the token embeddings, but "
                      "clef-flash's lexical prior needs the untied LM head (re-convert without "
                      "tying, as llama.cpp's qwen35 conversion does)");
  }

  OpenedModel out{layout,
                  paths,
                  backbone_source(paths.gguf, layout),
                  head::HeadWeights{},
                  paths.gguf,
                  static_cast<std::int64_t>(*n_embd),
                  {}};
  if (layout == Layout::hf_head) {
    if (!paths.head_weights || !paths.head_config) {
      throw model_error(
          where + " is a qwen35 GGUF without a joint schema head (layout A), and " +
          (paths.head_weights ? "joint_head_config.json" : "joint_head.safetensors") +
          " is not beside it: put the release's joint_head.safetensors and "
          "joint_head_config.json next to it, or use a GGUF with the head inside (llama.cpp's "
          "clef layout or Ollama's)");
    }
    out.head = head::HeadWeights::load(*paths.head_weights, *paths.head_config, out.n_embd);
    out.differences = config_differences(out.head.config());
    const std::string dtypes = safetensors_dtypes(*paths.head_weights);
    if (dtypes != "BF16") {
      out.differences.push_back("joint_head.safetensors dtype " + dtypes + " (reference BF16)");
    }
    return out;
  }
  if (paths.head_weights) {
    throw model_error(where + " holds a joint schema head (layout " +
                      std::string(layout_letter(layout)) + ") and " + paths.head_weights->string() +
                      " is beside it: two heads, clef will not guess which one to use");
  }
  const util::MappedFile file(paths.gguf);
  GgufHead h = layout == Layout::llama_cpp ? read_llama_cpp_head(g, file.bytes())
                                           : read_torch_named_head(g, file.bytes(), layout);
  if (h.weights.config().hidden_size != out.n_embd) {
    throw model_error(where + ": the joint schema head's hidden_size " +
                      std::to_string(h.weights.config().hidden_size) +
                      " does not match the backbone's embedding_length " +
                      std::to_string(out.n_embd));
  }
  out.head = std::move(h.weights);
  out.differences = std::move(h.differences);
  return out;
}

OpenedModel open_model_dir(const std::filesystem::path& dir) {
  return open_model(find_model_paths(dir));
}

}  // namespace clef::artifact
