#pragma once
// Test support: a GGUF read with its tensor data, and a rewriting copy of a GGUF (keys edited,
// tensors dropped or changed) for damaged-file tests.

#include <filesystem>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>

#include "ggml.h"
#include "gguf.h"
#include "gguf/handles.hpp"

namespace clef::test {

/// A GGUF read with gguf_init_from_file(no_alloc = false): its keys in `gguf`, its tensors with
/// their data in `data`.
struct LoadedGguf {
  gguf::GgufContextPtr gguf;
  gguf::GgmlContextPtr data;
};

/// Reads `path` with its tensor data. Throws std::runtime_error when ggml cannot read it.
inline LoadedGguf load_gguf_with_data(const std::filesystem::path& path) {
  ggml_context* data = nullptr;
  LoadedGguf g;
  g.gguf.reset(gguf_init_from_file(path.c_str(), {/*no_alloc=*/false, &data}));
  g.data.reset(data);
  if (!g.gguf) throw std::runtime_error("cannot read " + path.string());
  return g;
}

/// Copies the GGUF `in` to `out` with its data, dropping the tensors in `drop`, letting `edit`
/// change the keys (gguf_set_val_*, gguf_remove_key) and `edit_data` the tensors' values.
/// Throws std::runtime_error when `in` cannot be read or `out` written.
inline void rewrite_gguf(const std::filesystem::path& in, const std::filesystem::path& out,
                         const std::function<void(gguf_context*)>& edit,
                         const std::set<std::string>& drop = {},
                         const std::function<void(ggml_context*)>& edit_data = {}) {
  const LoadedGguf src = load_gguf_with_data(in);
  const gguf::GgufContextPtr dst(gguf_init_empty());
  gguf_set_kv(dst.get(), src.gguf.get());
  edit(dst.get());
  if (edit_data) edit_data(src.data.get());
  for (std::int64_t i = 0; i < gguf_get_n_tensors(src.gguf.get()); ++i) {
    const std::string name = gguf_get_tensor_name(src.gguf.get(), i);
    if (!drop.contains(name)) {
      gguf_add_tensor(dst.get(), ggml_get_tensor(src.data.get(), name.c_str()));
    }
  }
  if (!gguf_write_to_file(dst.get(), out.c_str(), false)) {
    throw std::runtime_error("cannot write " + out.string());
  }
}

}  // namespace clef::test
