#pragma once
// clef::gguf::GgufFile: the metadata of one GGUF file (keys and tensor infos, no tensor data),
// read with ggml's gguf API, plus the byte range of every tensor so callers can read or map its
// data. Errors are clef::Error (model_error) naming the file.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "gguf/handles.hpp"

namespace clef::gguf {

/// One tensor's header. `ne` always has 4 entries (unused dims are 1), so a tensor written as
/// [W, 1] and one written as 1-D [W] compare equal, as ggml itself treats them.
struct TensorRef {
  std::int64_t index = -1;
  std::string name;
  ggml_type type = GGML_TYPE_F32;
  std::array<std::int64_t, 4> ne{1, 1, 1, 1};
  std::uint64_t offset = 0;  ///< absolute file offset of the first byte
  std::size_t bytes = 0;     ///< ggml_nbytes of the tensor
};

/// "[64, 32]": ne up to the last dimension that is not 1 (at least one entry).
std::string ne_string(const std::array<std::int64_t, 4>& ne);

class GgufFile {
 public:
  /// Reads the header of `path`. Throws model_error when the file is missing, does not start
  /// with the GGUF magic ("... is not a GGUF file"), its header is invalid or truncated, or
  /// (unless `header_only`, for a file of which only the header matters or only the first bytes
  /// exist) a tensor's data lies outside the file.
  explicit GgufFile(const std::filesystem::path& path, bool header_only = false);

  const std::filesystem::path& path() const noexcept { return path_; }
  const gguf_context* raw() const noexcept { return ctx_.get(); }
  std::uint64_t file_size() const noexcept { return file_size_; }

  bool has(std::string_view key) const;
  /// All keys in file order.
  std::vector<std::string> keys() const;

  // Strict readers: nullopt when the key is absent; model_error when it has another type.

  /// A string value. Throws model_error when present with another type.
  std::optional<std::string> get_string(std::string_view key) const;
  /// An integer value of any GGUF integer type. Throws model_error when the key has a
  /// non-integer type or a negative value.
  std::optional<std::uint64_t> get_uint(std::string_view key) const;
  /// A float value (f32 or f64). Throws model_error for another type.
  std::optional<double> get_float(std::string_view key) const;

  // Lenient readers: nullopt (or empty) when the key is absent or has another type.

  /// A string value.
  std::optional<std::string> find_string(std::string_view key) const;
  /// An integer value of any GGUF integer type (u64 values above INT64_MAX wrap).
  std::optional<std::int64_t> find_int(std::string_view key) const;
  /// A float or integer value as double.
  std::optional<double> find_number(std::string_view key) const;
  /// A bool value.
  std::optional<bool> find_bool(std::string_view key) const;
  /// Element count of an array key.
  std::optional<std::size_t> find_array_size(std::string_view key) const;
  /// Elements of a numeric array as doubles (bool arrays as 0/1); empty when absent or not a
  /// numeric array.
  std::vector<double> numeric_array(std::string_view key) const;
  /// An integer key that must be present: throws model_error "missing integer key" naming the
  /// file and key when it is absent or not an integer.
  std::int64_t require_int(std::string_view key) const;

  std::optional<TensorRef> tensor(std::string_view name) const;
  /// Every tensor, in file order.
  std::vector<TensorRef> tensors() const;

 private:
  std::int64_t find_key(std::string_view key) const;
  std::optional<std::int64_t> int_at(std::int64_t id) const;  ///< integer types only
  std::optional<double> float_at(std::int64_t id) const;      ///< f32 / f64 only
  TensorRef ref(std::int64_t index) const;

  std::filesystem::path path_;
  std::uint64_t file_size_ = 0;
  GgufContextPtr ctx_;
};

}  // namespace clef::gguf
