#pragma once
// Small read-only view of a GGUF file's metadata (keys and tensor infos, no tensor data), on top
// of ggml's gguf C API. Errors are clef::Error model_error with the file name in the message.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"

namespace clef::info {

/// One tensor's header: name, ggml type, ne (innermost first, trailing 1s dropped), data bytes.
struct GgufTensor {
  std::string name;
  ggml_type type;
  std::vector<std::int64_t> ne;
  std::size_t bytes;
};

class GgufFile {
 public:
  /// Reads the metadata of `path`. Throws model_error when the file is missing, does not start
  /// with the GGUF magic, or gguf_init_from_file rejects it.
  explicit GgufFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  std::uintmax_t file_size() const { return file_size_; }
  const gguf_context* raw() const { return ctx_.get(); }

  bool has(const std::string& key) const;
  /// A string value; nullopt when absent or not a string.
  std::optional<std::string> get_string(const std::string& key) const;
  /// An integer value of any GGUF integer type; nullopt when absent or not an integer.
  std::optional<std::int64_t> get_int(const std::string& key) const;
  /// A float (or integer) value as double; nullopt when absent or not numeric.
  std::optional<double> get_float(const std::string& key) const;
  std::optional<bool> get_bool(const std::string& key) const;
  /// Elements of a numeric array as doubles (bool arrays as 0/1); empty when absent or not a
  /// numeric array.
  std::vector<double> get_array(const std::string& key) const;
  /// Element count of an array key; nullopt when absent or not an array.
  std::optional<std::size_t> array_size(const std::string& key) const;

  /// An integer key that must be present: throws model_error naming the file and key otherwise.
  std::int64_t require_int(const std::string& key) const;

  std::optional<GgufTensor> tensor(const std::string& name) const;
  std::vector<GgufTensor> tensors() const;

 private:
  struct Free {
    void operator()(gguf_context* c) const { gguf_free(c); }
  };
  std::filesystem::path path_;
  std::uintmax_t file_size_ = 0;
  std::unique_ptr<gguf_context, Free> ctx_;
};

/// "F16", "Q4_K", ... (ggml_type_name).
std::string type_name(ggml_type type);

}  // namespace clef::info
