#include "head/safetensors.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

#include "util/error.hpp"

namespace clef::head {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

constexpr std::uint64_t kMaxHeaderSize = 100'000'000;  // the reference library's limit

struct DTypeEntry {
  DType type;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeEntry, 15> kDTypes{{
    {DType::BOOL, "BOOL", 1},
    {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},
    {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},
    {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},
    {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E5M2, "F8_E5M2", 1},
}};

std::string_view json_string(const rapidjson::Value& v) {
  return {v.GetString(), v.GetStringLength()};
}

/// a * b, or throws when it overflows size_t.
std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& what) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b) {
    throw model_error(what + ": tensor size overflows");
  }
  return a * b;
}

}  // namespace

std::string_view dtype_name(DType t) noexcept {
  for (const auto& e : kDTypes) {
    if (e.type == t) return e.name;
  }
  return "?";
}

std::int64_t TensorInfo::numel() const noexcept {
  // A zero anywhere makes the product 0 whatever the other dims ([2, 2^62, 0] is empty, and
  // multiplying it out in order would overflow: undefined behaviour).
  for (auto d : shape) {
    if (d == 0) return 0;
  }
  std::int64_t n = 1;
  for (auto d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<std::int64_t>::max();
  }
  return n;
}

float bf16_to_f32(std::uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

float f16_to_f32(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exp = (bits >> 10) & 0x1Fu;
  std::uint32_t mant = bits & 0x3FFu;
  std::uint32_t out;
  if (exp == 0x1F) {
    out = sign | 0x7F800000u | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    out = sign | ((exp + 112u) << 23) | (mant << 13);  // 112 = 127 - 15
  } else if (mant == 0) {
    out = sign;  // +-0
  } else {
    // subnormal: value = mant * 2^-24; normalize
    std::uint32_t e = 113;  // exponent of 2^-14 in f32 bias terms is 113
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    mant &= 0x3FFu;
    out = sign | (e << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path), file_(path) {
  const std::string where = path.string();
  const auto bytes = file_.bytes();
  if (bytes.size() < 8) {
    throw model_error(where + ": truncated safetensors file (" + std::to_string(bytes.size()) +
                      " bytes, no header length)");
  }
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeaderSize) {
    throw model_error(where + ": safetensors header length " + std::to_string(header_len) +
                      " exceeds the format's limit of 100000000 bytes");
  }
  if (header_len > bytes.size() - 8) {
    throw model_error(where + ": truncated safetensors file: header of " +
                      std::to_string(header_len) + " bytes but only " +
                      std::to_string(bytes.size() - 8) + " bytes follow the length");
  }
  const char* header = reinterpret_cast<const char*>(bytes.data() + 8);
  data_ = bytes.subspan(8 + header_len);

  if (header_len == 0 || header[0] != '{') {
    throw model_error(where + ": safetensors header is not a JSON object");
  }
  rapidjson::Document doc;
  // Iterative: a downloaded file's header may nest arbitrarily deep, which overflows the stack
  // of RapidJSON's default recursive parser.
  doc.Parse<rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag>(header,
                                                                                    header_len);
  if (doc.HasParseError()) {
    throw model_error(where + ": safetensors header is not valid JSON: " +
                      rapidjson::GetParseError_En(doc.GetParseError()) + " at byte " +
                      std::to_string(doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) throw model_error(where + ": safetensors header is not a JSON object");

  std::set<std::string_view> seen;
  for (const auto& m : doc.GetObject()) {
    const std::string_view key = json_string(m.name);
    if (!seen.insert(key).second) {
      throw model_error(where + ": safetensors header names \"" + std::string(key) + "\" twice");
    }
    const std::string what = where + ": tensor \"" + std::string(key) + "\"";
    if (key == "__metadata__") {
      if (!m.value.IsObject()) throw model_error(where + ": __metadata__ is not an object");
      for (const auto& kv : m.value.GetObject()) {
        if (!kv.value.IsString()) {
          throw model_error(where + ": __metadata__ value of \"" +
                            std::string(json_string(kv.name)) + "\" is not a string");
        }
        metadata_.emplace_back(std::string(json_string(kv.name)),
                               std::string(json_string(kv.value)));
      }
      continue;
    }
    if (!m.value.IsObject()) throw model_error(what + " is not an object");
    const auto& obj = m.value;
    const auto dt = obj.FindMember("dtype");
    const auto sh = obj.FindMember("shape");
    const auto off = obj.FindMember("data_offsets");
    if (dt == obj.MemberEnd() || !dt->value.IsString()) {
      throw model_error(what + " has no string \"dtype\"");
    }
    if (sh == obj.MemberEnd() || !sh->value.IsArray()) {
      throw model_error(what + " has no array \"shape\"");
    }
    if (off == obj.MemberEnd() || !off->value.IsArray() || off->value.Size() != 2 ||
        !off->value[0].IsUint64() || !off->value[1].IsUint64()) {
      throw model_error(what + " has no \"data_offsets\" [begin, end] of non-negative integers");
    }
    TensorInfo t;
    t.name = std::string(key);
    const std::string_view dname = json_string(dt->value);
    const auto it = std::find_if(kDTypes.begin(), kDTypes.end(),
                                 [&](const DTypeEntry& e) { return e.name == dname; });
    if (it == kDTypes.end()) {
      throw model_error(what + " has unknown dtype \"" + std::string(dname) + "\"");
    }
    t.dtype = it->type;
    std::size_t numel = 1;
    for (const auto& d : sh->value.GetArray()) {
      if (!d.IsUint64() ||
          d.GetUint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        throw model_error(what + " has a shape entry that is not a non-negative integer");
      }
      numel = checked_mul(numel, static_cast<std::size_t>(d.GetUint64()), what);
      t.shape.push_back(static_cast<std::int64_t>(d.GetUint64()));
    }
    const std::size_t nbytes = checked_mul(numel, it->size, what);
    const std::uint64_t b = off->value[0].GetUint64();
    const std::uint64_t e = off->value[1].GetUint64();
    if (b > e || e > data_.size()) {
      throw model_error(what + " has data_offsets [" + std::to_string(b) + ", " +
                        std::to_string(e) + "] outside the data section of " +
                        std::to_string(data_.size()) + " bytes (truncated file?)");
    }
    if (e - b != nbytes) {
      throw model_error(what + " has " + std::to_string(e - b) + " bytes of data but dtype " +
                        std::string(dname) + " and its shape need " + std::to_string(nbytes));
    }
    t.begin = static_cast<std::size_t>(b);
    t.end = static_cast<std::size_t>(e);
    tensors_.push_back(std::move(t));
  }

  // The byte ranges must tile the data section: no gap, no overlap, no trailing bytes.
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::size_t expected = 0;
  for (const auto* t : by_offset) {
    if (t->begin != expected) {
      throw model_error(where + ": tensor \"" + t->name + "\" starts at byte " +
                        std::to_string(t->begin) + " of the data section, expected " +
                        std::to_string(expected) + " (gap or overlap)");
    }
    expected = t->end;
  }
  if (expected != data_.size()) {
    throw model_error(where + ": the tensors cover " + std::to_string(expected) +
                      " bytes but the data section has " + std::to_string(data_.size()));
  }
  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const noexcept {
  const auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const TensorInfo& t, std::string_view n) { return std::string_view(t.name) < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

std::span<const std::byte> SafetensorsFile::raw(const TensorInfo& t) const noexcept {
  return data_.subspan(t.begin, t.end - t.begin);
}

void SafetensorsFile::release(const TensorInfo& t) const noexcept {
  file_.drop_pages(raw(t));
}

std::vector<float> SafetensorsFile::to_f32(const TensorInfo& t) const {
  const auto bytes = raw(t);
  const auto n = static_cast<std::size_t>(t.numel());
  std::vector<float> out(n);
  switch (t.dtype) {
    case DType::F32:
      std::memcpy(out.data(), bytes.data(), n * sizeof(float));
      break;
    case DType::BF16:
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, bytes.data() + 2 * i, 2);
        out[i] = t.dtype == DType::BF16 ? bf16_to_f32(bits) : f16_to_f32(bits);
      }
      break;
    default:
      throw model_error(path_.string() + ": tensor \"" + t.name + "\" has dtype " +
                        std::string(dtype_name(t.dtype)) +
                        "; only F32, F16 and BF16 can be read as f32");
  }
  return out;
}

}  // namespace clef::head
