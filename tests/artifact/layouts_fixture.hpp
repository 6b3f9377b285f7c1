#pragma once
// Test support for the artifact tests: the shared tiny model (layout A) converted once per
// process into layout B (BF16 head matrices), layout B (Q8_0 head matrices, 1-D scorer_out) and
// layout C, plus a GGUF rewriting helper for damaged files.

#include <functional>
#include <set>
#include <string>

#include "artifact/layout_writer.hpp"
#include "artifact/open_model.hpp"
#include "ggml.h"
#include "gguf.h"
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

/// Copies the GGUF `in` to `out` with its data, dropping the tensors in `drop`, letting `edit`
/// change the keys (gguf_set_val_*, gguf_remove_key) and `edit_data` the tensors' values.
inline void rewrite_gguf(const std::filesystem::path& in, const std::filesystem::path& out,
                         const std::function<void(gguf_context*)>& edit,
                         const std::set<std::string>& drop = {},
                         const std::function<void(ggml_context*)>& edit_data = {}) {
  ggml_context* data = nullptr;
  gguf_context* src = gguf_init_from_file(in.c_str(), {/*no_alloc=*/false, &data});
  if (!src) throw std::runtime_error("cannot read " + in.string());
  gguf_context* dst = gguf_init_empty();
  gguf_set_kv(dst, src);
  edit(dst);
  if (edit_data) edit_data(data);
  for (std::int64_t i = 0; i < gguf_get_n_tensors(src); ++i) {
    const std::string name = gguf_get_tensor_name(src, i);
    if (!drop.contains(name)) gguf_add_tensor(dst, ggml_get_tensor(data, name.c_str()));
  }
  const bool ok = gguf_write_to_file(dst, out.c_str(), false);
  gguf_free(dst);
  gguf_free(src);
  ggml_free(data);
  if (!ok) throw std::runtime_error("cannot write " + out.string());
}

}  // namespace clef::test
