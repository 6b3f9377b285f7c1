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

struct LayoutModels {
  artifact::ModelPaths a, b_bf16, b_q8, c;
};

inline artifact::ModelPaths tiny_paths() {
  const auto& m = tiny_model();
  return {m.backbone, m.mmproj, m.head, m.head_config};
}

/// The tiny model in every layout, written once per process.
inline const LayoutModels& layout_models() {
  static TempDir dir("clef-layouts");
  static const LayoutModels models = [] {
    LayoutModels m;
    m.a = tiny_paths();
    const auto write = [&](artifact::Layout layout, const char* name, ggml_type type) {
      artifact::ModelPaths p;
      p.gguf = dir.path() / name;
      artifact::write_layout(m.a, layout, p.gguf, type);
      return p;
    };
    m.b_bf16 = write(artifact::Layout::llama_cpp, "b_bf16.gguf", GGML_TYPE_BF16);
    m.b_q8 = write(artifact::Layout::llama_cpp, "b_q8.gguf", GGML_TYPE_Q8_0);
    m.c = write(artifact::Layout::ollama, "c.gguf", GGML_TYPE_F32);
    return m;
  }();
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
