#include "artifact/backbone_loader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <ggml-backend.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "artifact/gguf_meta.hpp"
#include "util/error.hpp"

namespace clef::artifact {

namespace {

/// An open file descriptor, closed on destruction.
class Fd {
 public:
  explicit Fd(const std::filesystem::path& p) : fd_(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw model_error("cannot open " + p.string() + ": " + std::strerror(errno));
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  /// Reads exactly `n` bytes at `offset` into `dst`; false on error or end of file.
  bool read_at(void* dst, std::size_t n, std::uint64_t offset) const {
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      p += r;
      n -= static_cast<std::size_t>(r);
      offset += static_cast<std::uint64_t>(r);
    }
    return true;
  }

 private:
  int fd_;
};

/// What the set_tensor_data callback needs: the file, where each backbone tensor lies, and the
/// first problem met (the callback cannot throw through libllama's C interface).
struct TensorSource {
  const Fd* file = nullptr;
  std::map<std::string, GgufTensorRef, std::less<>> tensors;
  std::string error;
  std::size_t n_loaded = 0;
  std::vector<char> staging;  ///< for tensors in non-host (GPU) buffers
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
  const GgufTensorRef& t = it->second;
  std::array<std::int64_t, 4> ne{tensor->ne[0], tensor->ne[1], tensor->ne[2], tensor->ne[3]};
  if (tensor->type != t.type || ne != t.ne || ggml_nbytes(tensor) != t.bytes) {
    src.error = "tensor " + t.name + " is " + ggml_type_name(t.type) + " " + ne_string(t.ne) +
                " in the file but the qwen35 backbone needs " + ggml_type_name(tensor->type) + " " +
                ne_string(ne);
    return;
  }
  bool ok = false;
  if (tensor->buffer != nullptr && ggml_backend_buffer_is_host(tensor->buffer)) {
    ok = src.file->read_at(tensor->data, t.bytes, t.offset);
  } else {
    src.staging.resize(t.bytes);
    ok = src.file->read_at(src.staging.data(), t.bytes, t.offset);
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

struct GgufFree {
  void operator()(gguf_context* c) const noexcept { gguf_free(c); }
};
struct GgmlFree {
  void operator()(ggml_context* c) const noexcept { ggml_free(c); }
};

}  // namespace

OwnedLlamaModel load_backbone(const BackboneSource& source, const llama_model_params& params) {
  const std::string where = source.gguf.string();
  if (source.loads_directly) {
    OwnedLlamaModel m(llama_model_load_from_file(where.c_str(), params));
    if (!m) throw model_error("cannot load backbone GGUF '" + where + "' (see log above)");
    return m;
  }

  const GgufMeta file_meta(source.gguf);
  const gguf_context* in = file_meta.raw();
  std::unique_ptr<gguf_context, GgufFree> meta(gguf_init_empty());
  for (std::int64_t i = 0; i < gguf_get_n_kv(in); ++i) {
    const std::string key = gguf_get_key(in, i);
    if (key == "general.architecture" || starts_with_any(key, source.drop_key_prefixes)) continue;
    std::string renamed = key;
    if (!source.rename_from.empty() && key.starts_with(source.rename_from)) {
      renamed = "qwen35." + key.substr(source.rename_from.size());
    }
    copy_kv(meta.get(), in, i, renamed);
  }
  gguf_set_val_str(meta.get(), "general.architecture", "qwen35");

  TensorSource tensors;
  const auto all = file_meta.tensors();
  std::unique_ptr<ggml_context, GgmlFree> ctx(
      ggml_init({ggml_tensor_overhead() * (all.size() + 1), nullptr, /*no_alloc=*/true}));
  if (!ctx) throw Error(ErrorKind::internal, "internal", "ggml_init failed");
  for (const auto& t : all) {
    if (starts_with_any(t.name, source.head_tensor_prefixes)) continue;
    ggml_tensor* info = ggml_new_tensor(ctx.get(), t.type, GGML_MAX_DIMS, t.ne.data());
    ggml_set_name(info, t.name.c_str());
    gguf_add_tensor(meta.get(), info);
    tensors.tensors.emplace(t.name, t);
  }

  const Fd fd(source.gguf);
  tensors.file = &fd;
  OwnedLlamaModel m(llama_model_init_from_user(meta.get(), set_tensor_data, &tensors, params));
  if (!m) {
    throw model_error("cannot load the backbone of '" + where + "' (see log above)" +
                      (tensors.error.empty() ? "" : ": " + tensors.error));
  }
  if (!tensors.error.empty()) throw model_error(where + ": " + tensors.error);
  if (tensors.n_loaded != tensors.tensors.size()) {
    throw model_error(where + ": libllama used " + std::to_string(tensors.n_loaded) + " of the " +
                      std::to_string(tensors.tensors.size()) + " backbone tensors");
  }
  return m;
}

}  // namespace clef::artifact
