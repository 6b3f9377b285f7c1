#include "artifact/backbone_loader.hpp"

#include <ggml-backend.h>

#include <map>
#include <string>
#include <vector>

#include "gguf/copy_keys.hpp"
#include "gguf/gguf_file.hpp"
#include "util/error.hpp"
#include "util/file_reader.hpp"

namespace clef::artifact {

namespace {

/// What the set_tensor_data callback needs: the file, where each backbone tensor lies, and the
/// first problem met (the callback cannot throw through libllama's C interface).
struct TensorSource {
  const util::FileReader* file = nullptr;
  std::map<std::string, gguf::TensorRef, std::less<>> tensors;
  std::string error;
  std::size_t n_loaded = 0;
  std::vector<std::byte> staging;  ///< for tensors in non-host (GPU) buffers
};

void set_tensor_data(ggml_tensor* tensor, void* user_data) {
  auto& src = *static_cast<TensorSource*>(user_data);
  if (!src.error.empty()) return;
  const auto it = src.tensors.find(ggml_get_name(tensor));
  if (it == src.tensors.end()) {
    src.error = std::string("libllama asked for tensor ") + ggml_get_name(tensor) +
                ", which the file does not have";
    return;
  }
  const gguf::TensorRef& t = it->second;
  std::array<std::int64_t, 4> ne{tensor->ne[0], tensor->ne[1], tensor->ne[2], tensor->ne[3]};
  if (tensor->type != t.type || ne != t.ne || ggml_nbytes(tensor) != t.bytes) {
    src.error = "tensor " + t.name + " is " + ggml_type_name(t.type) + " " + gguf::ne_string(t.ne) +
                " in the file but the qwen35 backbone needs " + ggml_type_name(tensor->type) + " " +
                gguf::ne_string(ne);
    return;
  }
  bool ok = false;
  if (tensor->buffer != nullptr && ggml_backend_buffer_is_host(tensor->buffer)) {
    ok = src.file->try_read_at(t.offset, {static_cast<std::byte*>(tensor->data), t.bytes});
  } else {
    src.staging.resize(t.bytes);
    ok = src.file->try_read_at(t.offset, src.staging);
    if (ok) ggml_backend_tensor_set(tensor, src.staging.data(), 0, t.bytes);
  }
  if (!ok) {
    src.error = "cannot read the data of tensor " + t.name + " (truncated file?)";
    return;
  }
  ++src.n_loaded;
}

bool starts_with_any(std::string_view s, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

}  // namespace

OwnedLlamaModel load_backbone(const BackboneSource& source, const llama_model_params& params) {
  const std::string where = source.gguf.string();
  if (source.loads_directly) {
    OwnedLlamaModel m(llama_model_load_from_file(where.c_str(), params));
    if (!m) throw model_error("cannot load backbone GGUF '" + where + "' (see log above)");
    return m;
  }

  const gguf::GgufFile file_meta(source.gguf);
  const gguf_context* in = file_meta.raw();
  gguf::GgufContextPtr meta(gguf_init_empty());
  for (std::int64_t i = 0; i < gguf_get_n_kv(in); ++i) {
    const std::string key = gguf_get_key(in, i);
    if (key == "general.architecture" || starts_with_any(key, source.drop_key_prefixes)) continue;
    std::string renamed = key;
    if (!source.rename_from.empty() && key.starts_with(source.rename_from)) {
      renamed = "qwen35." + key.substr(source.rename_from.size());
    }
    gguf::copy_kv(meta.get(), in, i, renamed);
  }
  gguf_set_val_str(meta.get(), "general.architecture", "qwen35");

  TensorSource tensors;
  const auto all = file_meta.tensors();
  gguf::GgmlContextPtr ctx(
      ggml_init({ggml_tensor_overhead() * (all.size() + 1), nullptr, /*no_alloc=*/true}));
  if (!ctx) throw Error(ErrorKind::internal, "internal", "ggml_init failed");
  for (const auto& t : all) {
    if (starts_with_any(t.name, source.head_tensor_prefixes)) continue;
    ggml_tensor* info = ggml_new_tensor(ctx.get(), t.type, GGML_MAX_DIMS, t.ne.data());
    ggml_set_name(info, t.name.c_str());
    gguf_add_tensor(meta.get(), info);
    tensors.tensors.emplace(t.name, t);
  }

  const util::FileReader file(source.gguf);
  file.advise_sequential();
  tensors.file = &file;
  OwnedLlamaModel m(llama_model_init_from_user(meta.get(), set_tensor_data, &tensors, params));
  if (!m) {
    throw model_error("cannot load the backbone of '" + where + "' (see log above)" +
                      (tensors.error.empty() ? "" : ": " + tensors.error));
  }
  if (!tensors.error.empty()) throw model_error(where + ": " + tensors.error);
  // A no_alloc load (a memory measurement) reads no data.
  if (!params.no_alloc && tensors.n_loaded != tensors.tensors.size()) {
    throw model_error(where + ": libllama used " + std::to_string(tensors.n_loaded) + " of the " +
                      std::to_string(tensors.tensors.size()) + " backbone tensors");
  }
  return m;
}

}  // namespace clef::artifact
