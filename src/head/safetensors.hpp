#pragma once
// clef::head::SafetensorsFile: a strict reader of the safetensors format
// (https://huggingface.co/docs/safetensors, "Format"): u64 LE header length N, N bytes of JSON
// header, then the data section. The file is memory-mapped; tensors are widened to f32 on demand.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/mapped_file.hpp"

namespace clef::head {

/// Element types named by the safetensors format.
enum class DType {
  BOOL,
  U8,
  I8,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
  F8_E4M3,
  F8_E5M2
};

/// The format's name of `t` ("F32", "BF16", ...).
std::string_view dtype_name(DType t) noexcept;

/// One tensor entry of the header.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  ///< row-major dims; empty for a 0-dim scalar (1 element)
  std::size_t begin = 0;            ///< byte offset of the first byte, relative to the data section
  std::size_t end = 0;              ///< one past the last byte
  /// Number of elements: the product of the dims (1 for a scalar, 0 when any dim is 0,
  /// INT64_MAX when it would overflow).
  std::int64_t numel() const noexcept;
};

/// bfloat16 bits -> f32, exact (`bits << 16`).
float bf16_to_f32(std::uint16_t bits) noexcept;
/// IEEE binary16 bits -> f32, exact (subnormals, infinities and NaN included).
float f16_to_f32(std::uint16_t bits) noexcept;

/// A safetensors file, mapped read-only and validated at construction:
///  - the header length fits the file (and is at most 100,000,000 bytes, the format's limit);
///  - the header is a JSON object with no duplicated key; `__metadata__`, if present, maps
///    strings to strings; every other member is {"dtype", "shape", "data_offsets"} with a known
///    dtype, non-negative integer dims and offsets [begin, end] where end - begin equals
///    numel * dtype size (overflow-checked);
///  - the tensors' byte ranges tile the data section exactly: no gap, no overlap, nothing after.
/// Unknown keys inside a tensor entry are ignored, as the reference `safetensors` library does.
/// Throws clef::Error (model_error) naming the file and the fault; never reads out of bounds.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const noexcept { return path_; }
  /// All tensors, sorted by name.
  const std::vector<TensorInfo>& tensors() const noexcept { return tensors_; }
  /// The tensor called `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const noexcept;
  /// `__metadata__` as (key, value) pairs in file order (empty when absent).
  const std::vector<std::pair<std::string, std::string>>& metadata() const noexcept {
    return metadata_;
  }
  /// The raw little-endian bytes of `t` (a view into the mapping).
  std::span<const std::byte> raw(const TensorInfo& t) const noexcept;
  /// The elements of `t` widened exactly to f32, row-major. Supports F32, F16 and BF16;
  /// throws model_error for any other dtype.
  std::vector<float> to_f32(const TensorInfo& t) const;
  /// Drops `t`'s mapped pages from resident memory once read (util::MappedFile::drop_pages):
  /// reading a head tensor by tensor then holds one tensor at a time.
  void release(const TensorInfo& t) const noexcept;

 private:
  std::filesystem::path path_;
  util::MappedFile file_;
  std::span<const std::byte> data_;  ///< the data section
  std::vector<TensorInfo> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace clef::head
