#pragma once
// Test-only safetensors writer (format: u64 LE header length, JSON header padded with spaces to
// a multiple of 8, data), used to build valid and deliberately broken files.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "head/safetensors.hpp"

namespace clef::head::testing {

struct WriteTensor {
  std::string name;
  std::string dtype;  ///< "F32", "BF16", ...
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;
};

inline std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

/// Writes `header` (as is) and `data` behind a u64 length (no padding added).
inline void write_raw_safetensors(const std::filesystem::path& path, const std::string& header,
                                  const std::vector<std::byte>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

/// The JSON header describing `tensors` stored back to back in the given order.
inline std::string safetensors_header(const std::vector<WriteTensor>& tensors) {
  std::string h = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::size_t offset = 0;
  for (const auto& t : tensors) {
    h += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) h += ',';
      h += std::to_string(t.shape[i]);
    }
    h += "],\"data_offsets\":[" + std::to_string(offset) + "," +
         std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  h += "}";
  while (h.size() % 8 != 0) h += ' ';
  return h;
}

/// Writes a valid file holding `tensors`.
inline void write_safetensors(const std::filesystem::path& path,
                              const std::vector<WriteTensor>& tensors) {
  std::vector<std::byte> data;
  for (const auto& t : tensors) data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  write_raw_safetensors(path, safetensors_header(tensors), data);
}

/// Every tensor of an existing file, raw bytes kept.
inline std::vector<WriteTensor> read_all(const std::filesystem::path& path) {
  const SafetensorsFile f(path);
  std::vector<WriteTensor> out;
  for (const auto& t : f.tensors()) {
    const auto raw = f.raw(t);
    out.push_back({t.name, std::string(dtype_name(t.dtype)), t.shape, {raw.begin(), raw.end()}});
  }
  return out;
}

/// A fresh empty directory under the build tree for one test's files.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::path(CLEF_BINARY_DIR) / "tests" / "head_scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace clef::head::testing
