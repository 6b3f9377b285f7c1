#pragma once
// Minimal safetensors writer (format: tests/data/oracle/head/README.md, "safetensors files"):
// u64 LE header length N, N bytes of compact JSON padded with spaces to a multiple of 8, then the
// tensors' raw little-endian data, contiguous, in name-sorted order.

#include <cstdint>
#include <filesystem>
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

  /// The whole file as bytes, values converted to `dtype` (BF16 by round-to-nearest-even).
  std::string serialize(SafetensorsDtype dtype) const;

  /// Writes serialize(dtype) to `path`. Throws std::runtime_error when the file cannot be written.
  void write(const std::filesystem::path& path, SafetensorsDtype dtype) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<std::int64_t> shape;
    std::vector<float> values;
  };
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace clef::head
