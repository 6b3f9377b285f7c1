#include "gguf/header_scan.hpp"

#include <ggml.h>

#include <cstring>
#include <fstream>
#include <string>

#include "util/error.hpp"

namespace clef::gguf {

namespace {

/// Thrown inside the scanner when the prefix ends early.
struct NeedMore {};

class Scanner {
 public:
  explicit Scanner(std::span<const std::byte> b) : b_(b) {}

  template <typename T>
  T read() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void skip(std::uint64_t n) {
    need(n);
    pos_ += n;
  }
  std::string string() {
    const auto n = read<std::uint64_t>();
    if (n > (std::uint64_t{1} << 30)) throw model_error("GGUF header: implausible string length");
    need(n);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  std::uint64_t pos() const { return pos_; }

 private:
  void need(std::uint64_t n) const {
    if (n > b_.size() - pos_) throw NeedMore{};
  }
  std::span<const std::byte> b_;
  std::uint64_t pos_ = 0;
};

/// Bytes of one scalar of GGUF value type `t` (0 for string, array or unknown).
std::uint64_t scalar_size(std::uint32_t t) {
  switch (t) {
    case 0:
    case 1:
    case 7:
      return 1;  // u8, i8, bool
    case 2:
    case 3:
      return 2;  // u16, i16
    case 4:
    case 5:
    case 6:
      return 4;  // u32, i32, f32
    case 10:
    case 11:
    case 12:
      return 8;  // u64, i64, f64
    default:
      return 0;
  }
}

constexpr std::uint32_t kString = 8;
constexpr std::uint32_t kArray = 9;

void skip_value(Scanner& s, std::uint32_t type, std::uint32_t& alignment, bool is_alignment) {
  if (type == kString) {
    s.string();
  } else if (type == kArray) {
    const auto elem = s.read<std::uint32_t>();
    const auto n = s.read<std::uint64_t>();
    if (elem == kString) {
      for (std::uint64_t i = 0; i < n; ++i) s.string();
    } else if (const std::uint64_t size = scalar_size(elem); size > 0) {
      if (n > (std::uint64_t{1} << 40) / size) throw model_error("GGUF header: implausible array");
      s.skip(n * size);
    } else {
      throw model_error("GGUF header: unsupported array element type " + std::to_string(elem));
    }
  } else if (const std::uint64_t size = scalar_size(type); size > 0) {
    if (is_alignment && type == 4) {
      alignment = s.read<std::uint32_t>();
    } else {
      s.skip(size);
    }
  } else {
    throw model_error("GGUF header: unknown value type " + std::to_string(type));
  }
}

}  // namespace

std::optional<std::uint64_t> header_size(std::span<const std::byte> prefix) {
  Scanner s(prefix);
  try {
    if (prefix.size() >= 4 && std::memcmp(prefix.data(), "GGUF", 4) != 0) {
      throw model_error("not a GGUF file (no GGUF magic)");
    }
    s.skip(4);
    const auto version = s.read<std::uint32_t>();
    if (version != 2 && version != 3) {
      throw model_error("GGUF version " + std::to_string(version) + " is not supported");
    }
    const auto n_tensors = s.read<std::uint64_t>();
    const auto n_kv = s.read<std::uint64_t>();
    if (n_tensors > (std::uint64_t{1} << 24) || n_kv > (std::uint64_t{1} << 24)) {
      throw model_error("GGUF header: implausible tensor or key count");
    }
    std::uint32_t alignment = 32;
    for (std::uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = s.string();
      const auto type = s.read<std::uint32_t>();
      skip_value(s, type, alignment, key == "general.alignment");
    }
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
      s.string();
      const auto n_dims = s.read<std::uint32_t>();
      if (n_dims > 4) throw model_error("GGUF header: a tensor has more than 4 dimensions");
      s.skip(8ull * n_dims);  // ne
      const auto type = s.read<std::uint32_t>();
      if (type >= GGML_TYPE_COUNT) {
        throw model_error("GGUF header: a tensor has the unknown ggml type " +
                          std::to_string(type));
      }
      s.skip(8);  // offset
    }
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      throw model_error("GGUF header: alignment is not a power of 2");
    }
    const std::uint64_t end = s.pos();
    return n_tensors == 0 ? end : (end + alignment - 1) / alignment * alignment;
  } catch (const NeedMore&) {
    return std::nullopt;
  }
}

std::uint64_t check_header(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw model_error(path.string() + ": cannot read the file");
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(path, ec);
  std::uint64_t want = std::min<std::uint64_t>(file_size, std::uint64_t{1} << 20);
  std::string prefix;
  while (true) {
    prefix.resize(want);
    in.seekg(0);
    in.read(prefix.data(), static_cast<std::streamsize>(want));
    prefix.resize(static_cast<std::size_t>(in.gcount()));
    in.clear();
    std::optional<std::uint64_t> size;
    try {
      size = header_size(std::as_bytes(std::span(prefix.data(), prefix.size())));
    } catch (const Error& e) {
      throw model_error(path.string() + ": " + e.what());
    }
    if (size) {
      if (*size > file_size) {
        throw model_error(path.string() + ": the file ends inside its GGUF header (truncated?)");
      }
      return *size;
    }
    if (want >= file_size) {
      throw model_error(path.string() + ": the file ends inside its GGUF header (truncated?)");
    }
    want = std::min<std::uint64_t>(file_size, want * 8);
  }
}

}  // namespace clef::gguf
