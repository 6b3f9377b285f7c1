#pragma once
// Minimal safetensors writer (format: tests/data/oracle/head/README.md, "safetensors files"):
// u64 LE header length N, N bytes of compact JSON padded with spaces to a multiple of 8, then the
// tensors' raw little-endian data, contiguous, in name-sorted order.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace clef::head {

/// Stored element type of every tensor in one file.
enum class SafetensorsDtype { f32, bf16 };

class SafetensorsWriter {
 public:
  /// Adds a `__metadata__` entry (string -> string), kept in insertion order.
  void set_metadata(std::string key, std::string value);

  /// Adds a tensor with row-major `values`; `shape` may be empty for a 0-dim scalar (1 value).
  /// Throws std::invalid_argument on a duplicate name or a value count that does not match.
  void add(std::string name, std::vector<std::int64_t> shape, std::vector<float> values);

  /// A tensor's values produced when the file is written, one tensor in memory at a time: the
  /// head of a training run is written from its buffers without a copy of the whole head.
  using ValuesSource = std::function<std::vector<float>()>;

  /// Adds a tensor whose row-major values `source` gives at write time (it must give exactly the
  /// shape's count: write and serialize throw std::invalid_argument otherwise). Throws
  /// std::invalid_argument on a duplicate name or a negative dimension.
  void add(std::string name, std::vector<std::int64_t> shape, ValuesSource source);

  /// The whole file as bytes, values converted to `dtype` (BF16 by round-to-nearest-even).
  std::string serialize(SafetensorsDtype dtype) const;

  /// Writes serialize(dtype)'s bytes to `path`, tensor by tensor (a source is asked once, and
  /// its values dropped before the next). Throws std::runtime_error when the file cannot be
  /// written.
  void write(const std::filesystem::path& path, SafetensorsDtype dtype) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<std::int64_t> shape;
    std::int64_t count = 0;
    std::vector<float> values;  ///< held, or
    ValuesSource source;        ///< produced at write time
  };
  /// The header (length prefix included) and the tensors in file order.
  std::string header(SafetensorsDtype dtype, std::vector<const Tensor*>& sorted) const;
  /// Calls `sink` with each tensor's bytes in file order.
  void emit(SafetensorsDtype dtype, const std::function<void(const std::string&)>& sink) const;
  std::int64_t check_new(const std::string& name, const std::vector<std::int64_t>& shape) const;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace clef::head
