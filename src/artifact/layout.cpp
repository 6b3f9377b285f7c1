#include "artifact/layout.hpp"

#include "util/error.hpp"

namespace clef::artifact {

std::string_view layout_letter(Layout layout) {
  switch (layout) {
    case Layout::hf_head:
      return "A";
    case Layout::llama_cpp:
      return "B";
    case Layout::ollama:
      return "C";
    case Layout::bobcat:
      return "D";
  }
  return "?";
}

std::string layout_description(Layout layout) {
  switch (layout) {
    case Layout::hf_head:
      return "A: qwen35 backbone GGUF + HF joint_head.safetensors / joint_head_config.json";
    case Layout::llama_cpp:
      return "B: llama.cpp clef GGUF (head inside as dec.blk.* / decision.*, q/k/v split, "
             "folded decision.scales)";
    case Layout::ollama:
      return "C: Ollama qwen35 GGUF (qwen35.decision.* keys, head inside as clef.<torch name>)";
    case Layout::bobcat:
      return "D: bobcat qwen35 GGUF (clef.* keys, head inside as clef.<torch name>)";
  }
  return "unknown";
}

Layout detect_layout(const gguf::GgufFile& g) {
  const std::string where = g.path().string();
  const auto arch = g.get_string("general.architecture");
  if (!arch) throw model_error(where + ": no general.architecture key");
  if (*arch == "clef") {
    const auto type = g.get_string("clef.decision.type");
    if (!type) {
      throw model_error(where +
                        ": a clef GGUF without clef.decision.type (llama.cpp's server refuses it "
                        "too); re-convert it with llama.cpp conversion/clef.py");
    }
    if (*type != "clef") {
      throw model_error(where + ": unknown decision.type \"" + *type +
                        "\" (clef reads only decision.type \"clef\")");
    }
    return Layout::llama_cpp;
  }
  if (*arch == "qwen35") {
    if (const auto type = g.get_string("qwen35.decision.type")) {
      if (*type != "clef") {
        throw model_error(where + ": unknown decision.type \"" + *type +
                          "\" (clef reads only decision.type \"clef\")");
      }
      return Layout::ollama;
    }
    if (g.has("clef.hidden_size")) return Layout::bobcat;
    return Layout::hf_head;
  }
  if (*arch == "clip") {
    throw model_error(where +
                      ": this is a vision projector (mmproj, architecture clip), not the "
                      "backbone");
  }
  throw model_error(where + ": architecture \"" + *arch +
                    "\" is not a clef-flash model (clef reads qwen35 or clef GGUFs)");
}

}  // namespace clef::artifact
