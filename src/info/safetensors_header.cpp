#include "info/safetensors_header.hpp"

#include <rapidjson/document.h>

#include <fstream>

#include "util/error.hpp"

namespace clef::info {

std::size_t safetensors_dtype_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw model_error(file + ": no such file");
  SafetensorsHeader h;
  h.file_size = std::filesystem::file_size(path, ec);
  std::ifstream f(path, std::ios::binary);
  unsigned char len_bytes[8] = {};
  f.read(reinterpret_cast<char*>(len_bytes), 8);
  if (!f) throw model_error(file + " is not a safetensors file (shorter than 8 bytes)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n < 2 || n > 100'000'000 || 8 + n > h.file_size) {
    throw model_error(file + " is not a safetensors file (header length " + std::to_string(n) +
                      " does not fit the file)");
  }
  std::string json(n, '\0');
  f.read(json.data(), static_cast<std::streamsize>(n));
  h.data_start = 8 + n;

  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    throw model_error(file + " is not a safetensors file (header is not a JSON object)");
  }
  const std::uint64_t data_size = h.file_size - h.data_start;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string name(it->name.GetString(), it->name.GetStringLength());
    const auto& v = it->value;
    if (name == "__metadata__") {
      if (!v.IsObject()) throw model_error(file + ": __metadata__ is not an object");
      for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
        if (m->value.IsString()) h.metadata[m->name.GetString()] = m->value.GetString();
      }
      continue;
    }
    const auto bad = [&](const std::string& why) {
      return model_error(file + ": tensor " + name + ": " + why);
    };
    if (!v.IsObject() || !v.HasMember("dtype") || !v["dtype"].IsString() || !v.HasMember("shape") ||
        !v["shape"].IsArray() || !v.HasMember("data_offsets") || !v["data_offsets"].IsArray() ||
        v["data_offsets"].Size() != 2) {
      throw bad("malformed header entry");
    }
    SafetensorsEntry e;
    e.dtype = v["dtype"].GetString();
    std::uint64_t count = 1;
    for (const auto& d : v["shape"].GetArray()) {
      if (!d.IsUint64()) throw bad("shape is not a list of non-negative integers");
      e.shape.push_back(static_cast<std::int64_t>(d.GetUint64()));
      count *= d.GetUint64();
    }
    const auto& off = v["data_offsets"];
    if (!off[0].IsUint64() || !off[1].IsUint64()) throw bad("bad data_offsets");
    e.begin = off[0].GetUint64();
    e.end = off[1].GetUint64();
    const std::size_t elem = safetensors_dtype_size(e.dtype);
    if (elem == 0) throw bad("unknown dtype " + e.dtype);
    if (e.end < e.begin || e.end > data_size || e.end - e.begin != count * elem) {
      throw bad("data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                ") do not match its shape or lie outside the file");
    }
    h.tensors.emplace(name, std::move(e));
  }
  return h;
}

}  // namespace clef::info
