#pragma once
// clef::artifact::GgufMeta: the metadata of one GGUF file (keys and tensor infos, no data), read
// with ggml's gguf API, plus the byte range of every tensor so callers can read or map its data.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggml.h"
#include "gguf.h"

namespace clef::artifact {

/// One tensor's header. `ne` always has 4 entries (unused dims are 1), so a tensor written as
/// [W, 1] and one written as 1-D [W] compare equal, as ggml itself treats them.
struct GgufTensorRef {
  std::int64_t index = -1;
  std::string name;
  ggml_type type = GGML_TYPE_F32;
  std::array<std::int64_t, 4> ne{1, 1, 1, 1};
  std::uint64_t offset = 0;  ///< absolute file offset of the first byte
  std::size_t bytes = 0;     ///< ggml_nbytes of the tensor
};

/// "[64, 32]": ne up to the last dimension that is not 1 (at least one entry).
std::string ne_string(const std::array<std::int64_t, 4>& ne);

class GgufMeta {
 public:
  /// Reads the header of `path`. Throws clef::Error (model_error) when the file is missing, is
  /// not a GGUF file or its header is invalid, or (unless `header_only`, for a file that holds
  /// only the first bytes of a GGUF) a tensor's data lies outside the file.
  explicit GgufMeta(const std::filesystem::path& path, bool header_only = false);

  const std::filesystem::path& path() const noexcept { return path_; }
  const gguf_context* raw() const noexcept { return ctx_.get(); }
  std::uint64_t file_size() const noexcept { return file_size_; }

  bool has(std::string_view key) const;
  /// A string value; nullopt when absent. Throws model_error when present with another type.
  std::optional<std::string> get_string(std::string_view key) const;
  /// An integer value of any GGUF integer type; nullopt when absent. Throws model_error when the
  /// key has a non-integer type or a negative value.
  std::optional<std::uint64_t> get_uint(std::string_view key) const;
  /// A float value (f32 or f64); nullopt when absent. Throws model_error for another type.
  std::optional<double> get_float(std::string_view key) const;
  /// GGUF type of `key`, nullopt when absent.
  std::optional<gguf_type> key_type(std::string_view key) const;
  /// All keys in file order.
  std::vector<std::string> keys() const;

  std::optional<GgufTensorRef> tensor(std::string_view name) const;
  std::vector<GgufTensorRef> tensors() const;

 private:
  struct Free {
    void operator()(gguf_context* c) const noexcept { gguf_free(c); }
  };
  GgufTensorRef ref(std::int64_t index) const;

  std::filesystem::path path_;
  std::uint64_t file_size_ = 0;
  std::unique_ptr<gguf_context, Free> ctx_;
};

/// Copies key `id` of `src` into `dst` under the name `new_key` (same type and value; arrays of
/// any element type, strings included). Throws model_error for a nested array.
void copy_kv(gguf_context* dst, const gguf_context* src, std::int64_t id,
             const std::string& new_key);

}  // namespace clef::artifact
