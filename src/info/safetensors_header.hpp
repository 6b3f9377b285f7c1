#pragma once
// Reads the JSON header of a safetensors file (no tensor data): u64 LE length N, N bytes of JSON
// mapping tensor name -> {dtype, shape, data_offsets} plus an optional "__metadata__" object.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace clef::info {

struct SafetensorsEntry {
  std::string dtype;  ///< "F32", "BF16", "F16", ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  ///< data_offsets, relative to the data section
};

struct SafetensorsHeader {
  std::uintmax_t file_size = 0;
  std::uint64_t data_start = 0;  ///< 8 + N
  std::map<std::string, std::string> metadata;
  std::map<std::string, SafetensorsEntry> tensors;  ///< by name
};

/// Parses the header of `path`. Throws model_error when the file is missing, too short, the header
/// is not a JSON object of well-formed entries, or an entry's data lies outside the file.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

/// Bytes per element of a safetensors dtype name (0 when unknown).
std::size_t safetensors_dtype_size(const std::string& dtype);

}  // namespace clef::info
