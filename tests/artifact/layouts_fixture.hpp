#pragma once
// Test support for the artifact tests: the shared tiny model (layout A) converted once per
// process into layout B (BF16 head matrices), layout B (Q8_0 head matrices, 1-D scorer_out) and
// layout C (support/gguf_rewrite.hpp rewrites them into damaged files).

#include <string>

#include "artifact/layout_writer.hpp"
#include "artifact/open_model.hpp"
#include "ggml.h"
#include "support/gguf_rewrite.hpp"
#include "support/tiny_model.hpp"

namespace clef::test {

inline artifact::ModelPaths tiny_paths() {
  const auto& m = tiny_model();
  return {m.backbone, m.mmproj, m.head, m.head_config};
}

/// The tiny model converted to `layout` (head matrices `type`), written on first use.
inline artifact::ModelPaths converted(artifact::Layout layout, ggml_type type, const char* name) {
  static TempDir dir("clef-layouts");
  artifact::ModelPaths p;
  p.gguf = dir.path() / name;
  if (!std::filesystem::exists(p.gguf)) artifact::write_layout(tiny_paths(), layout, p.gguf, type);
  return p;
}

/// The tiny model in every layout; each conversion is made once per process, when first used:
/// A (the shared tiny model), B with BF16 head matrices, B with Q8_0 head matrices, C.
struct LayoutModels {
  artifact::ModelPaths a() const { return tiny_paths(); }
  artifact::ModelPaths b_bf16() const {
    return converted(artifact::Layout::llama_cpp, GGML_TYPE_BF16, "b_bf16.gguf");
  }
  artifact::ModelPaths b_q8() const {
    return converted(artifact::Layout::llama_cpp, GGML_TYPE_Q8_0, "b_q8.gguf");
  }
  artifact::ModelPaths c() const {
    return converted(artifact::Layout::ollama, GGML_TYPE_F32, "c.gguf");
  }
};

inline const LayoutModels& layout_models() {
  static const LayoutModels models;
  return models;
}

}  // namespace clef::test
