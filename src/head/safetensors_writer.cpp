#include "head/safetensors_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "head/bf16.hpp"

namespace clef::head {

namespace {

/// JSON string literal; names and metadata are expected to be ASCII, but quotes, backslashes and
/// control characters are escaped anyway.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void append_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

void SafetensorsWriter::set_metadata(std::string key, std::string value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

std::int64_t SafetensorsWriter::check_new(const std::string& name,
                                          const std::vector<std::int64_t>& shape) const {
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("safetensors: negative dimension in " + name);
    count *= d;
  }
  for (const auto& t : tensors_) {
    if (t.name == name) throw std::invalid_argument("safetensors: duplicate tensor " + name);
  }
  return count;
}

void SafetensorsWriter::add(std::string name, std::vector<std::int64_t> shape,
                            std::vector<float> values) {
  const std::int64_t count = check_new(name, shape);
  if (count != static_cast<std::int64_t>(values.size())) {
    throw std::invalid_argument("safetensors: " + name + " has " + std::to_string(values.size()) +
                                " values for " + std::to_string(count) + " elements");
  }
  tensors_.push_back({std::move(name), std::move(shape), count, std::move(values), nullptr});
}

void SafetensorsWriter::add(std::string name, std::vector<std::int64_t> shape,
                            ValuesSource source) {
  const std::int64_t count = check_new(name, shape);
  tensors_.push_back({std::move(name), std::move(shape), count, {}, std::move(source)});
}

std::string SafetensorsWriter::header(SafetensorsDtype dtype,
                                      std::vector<const Tensor*>& sorted) const {
  sorted.clear();
  for (const auto& t : tensors_) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const Tensor* a, const Tensor* b) { return a->name < b->name; });

  const std::size_t elem = dtype == SafetensorsDtype::f32 ? 4 : 2;
  const char* dtype_name = dtype == SafetensorsDtype::f32 ? "F32" : "BF16";

  std::string header = "{";
  if (!metadata_.empty()) {
    header += "\"__metadata__\":{";
    for (std::size_t i = 0; i < metadata_.size(); ++i) {
      if (i) header += ',';
      header += json_string(metadata_[i].first) + ":" + json_string(metadata_[i].second);
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (const Tensor* t : sorted) {
    if (header.size() > 1) header += ',';
    header += json_string(t->name) + ":{\"dtype\":\"" + dtype_name + "\",\"shape\":[";
    for (std::size_t i = 0; i < t->shape.size(); ++i) {
      if (i) header += ',';
      header += std::to_string(t->shape[i]);
    }
    const std::uint64_t end = offset + static_cast<std::uint64_t>(t->count) * elem;
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::string out;
  append_le(out, header.size(), 8);
  return out + header;
}

void SafetensorsWriter::emit(SafetensorsDtype dtype,
                             const std::function<void(const std::string&)>& sink) const {
  std::vector<const Tensor*> sorted;
  sink(header(dtype, sorted));
  std::string bytes;
  for (const Tensor* t : sorted) {
    std::vector<float> produced;
    if (t->source) {
      produced = t->source();
      if (static_cast<std::int64_t>(produced.size()) != t->count) {
        throw std::invalid_argument("safetensors: " + t->name + " has " +
                                    std::to_string(produced.size()) + " values for " +
                                    std::to_string(t->count) + " elements");
      }
    }
    const std::vector<float>& values = t->source ? produced : t->values;
    bytes.clear();
    bytes.reserve(values.size() * (dtype == SafetensorsDtype::f32 ? 4 : 2));
    for (float v : values) {
      if (dtype == SafetensorsDtype::f32) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        append_le(bytes, bits, 4);
      } else {
        append_le(bytes, float_to_bf16(v), 2);
      }
    }
    sink(bytes);
  }
}

std::string SafetensorsWriter::serialize(SafetensorsDtype dtype) const {
  std::string out;
  emit(dtype, [&](const std::string& bytes) { out += bytes; });
  return out;
}

void SafetensorsWriter::write(const std::filesystem::path& path, SafetensorsDtype dtype) const {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  emit(dtype, [&](const std::string& bytes) {
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace clef::head
