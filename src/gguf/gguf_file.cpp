#include "gguf/gguf_file.hpp"

#include <fstream>

#include "gguf/header_scan.hpp"
#include "util/error.hpp"

namespace clef::gguf {

namespace {

/// `n` elements of type T at `data`, widened to double.
template <typename T>
std::vector<double> widen(const void* data, std::size_t n) {
  const T* p = static_cast<const T*>(data);
  return std::vector<double>(p, p + n);
}

/// The elements of the numeric array `id` as doubles (bools as 0/1); empty for another element
/// type.
std::vector<double> numeric_elements(const gguf_context* c, std::int64_t id) {
  const gguf_type t = gguf_get_arr_type(c, id);
  if (t == GGUF_TYPE_STRING || t == GGUF_TYPE_ARRAY) return {};  // no raw data to read
  const std::size_t n = gguf_get_arr_n(c, id);
  const void* data = gguf_get_arr_data(c, id);
  switch (t) {
    case GGUF_TYPE_UINT8:
      return widen<std::uint8_t>(data, n);
    case GGUF_TYPE_INT8:
      return widen<std::int8_t>(data, n);
    case GGUF_TYPE_BOOL: {
      std::vector<double> out = widen<std::int8_t>(data, n);
      for (double& v : out) v = v != 0 ? 1 : 0;
      return out;
    }
    case GGUF_TYPE_UINT16:
      return widen<std::uint16_t>(data, n);
    case GGUF_TYPE_INT16:
      return widen<std::int16_t>(data, n);
    case GGUF_TYPE_UINT32:
      return widen<std::uint32_t>(data, n);
    case GGUF_TYPE_INT32:
      return widen<std::int32_t>(data, n);
    case GGUF_TYPE_FLOAT32:
      return widen<float>(data, n);
    case GGUF_TYPE_UINT64:
      return widen<std::uint64_t>(data, n);
    case GGUF_TYPE_INT64:
      return widen<std::int64_t>(data, n);
    case GGUF_TYPE_FLOAT64:
      return widen<double>(data, n);
    default:
      return {};
  }
}

}  // namespace

std::string ne_string(const std::array<std::int64_t, 4>& ne) {
  std::size_t n = 4;
  while (n > 1 && ne[n - 1] == 1) --n;
  std::string s = "[";
  for (std::size_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

GgufFile::GgufFile(const std::filesystem::path& path, bool header_only) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw model_error(path.string() + ": no such file");
  }
  file_size_ = std::filesystem::file_size(path, ec);
  char magic[4] = {0, 0, 0, 0};
  std::ifstream(path, std::ios::binary).read(magic, 4);
  if (std::string_view(magic, 4) != "GGUF") {
    throw model_error(path.string() + " is not a GGUF file (no GGUF magic)");
  }
  check_header(path);  // every type field checked before ggml loads them into enums
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  ctx_.reset(gguf_init_from_file(path.string().c_str(), params));
  if (!ctx_) throw model_error(path.string() + ": the GGUF header is invalid or truncated");
  for (std::int64_t i = 0; !header_only && i < gguf_get_n_tensors(ctx_.get()); ++i) {
    const TensorRef t = ref(i);
    if (t.offset + t.bytes > file_size_) {
      throw model_error(path.string() + ": tensor \"" + t.name +
                        "\" lies outside the file (truncated download?)");
    }
  }
}

std::int64_t GgufFile::find_key(std::string_view key) const {
  return gguf_find_key(ctx_.get(), std::string(key).c_str());
}

bool GgufFile::has(std::string_view key) const {
  return find_key(key) >= 0;
}

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < gguf_get_n_kv(ctx_.get()); ++i) {
    out.emplace_back(gguf_get_key(ctx_.get(), i));
  }
  return out;
}

std::optional<std::int64_t> GgufFile::int_at(std::int64_t id) const {
  const gguf_context* c = ctx_.get();
  switch (gguf_get_kv_type(c, id)) {
    case GGUF_TYPE_UINT8:
      return gguf_get_val_u8(c, id);
    case GGUF_TYPE_INT8:
      return gguf_get_val_i8(c, id);
    case GGUF_TYPE_UINT16:
      return gguf_get_val_u16(c, id);
    case GGUF_TYPE_INT16:
      return gguf_get_val_i16(c, id);
    case GGUF_TYPE_UINT32:
      return gguf_get_val_u32(c, id);
    case GGUF_TYPE_INT32:
      return gguf_get_val_i32(c, id);
    case GGUF_TYPE_UINT64:
      return static_cast<std::int64_t>(gguf_get_val_u64(c, id));
    case GGUF_TYPE_INT64:
      return gguf_get_val_i64(c, id);
    default:
      return std::nullopt;
  }
}

std::optional<double> GgufFile::float_at(std::int64_t id) const {
  switch (gguf_get_kv_type(ctx_.get(), id)) {
    case GGUF_TYPE_FLOAT32:
      return gguf_get_val_f32(ctx_.get(), id);
    case GGUF_TYPE_FLOAT64:
      return gguf_get_val_f64(ctx_.get(), id);
    default:
      return std::nullopt;
  }
}

std::optional<std::string> GgufFile::find_string(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0 || gguf_get_kv_type(ctx_.get(), id) != GGUF_TYPE_STRING) return std::nullopt;
  return std::string(gguf_get_val_str(ctx_.get(), id));
}

std::optional<std::int64_t> GgufFile::find_int(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0) return std::nullopt;
  return int_at(id);
}

std::optional<double> GgufFile::find_number(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0) return std::nullopt;
  if (const auto f = float_at(id)) return f;
  const auto i = int_at(id);
  return i ? std::optional<double>(static_cast<double>(*i)) : std::nullopt;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  auto v = find_string(key);
  if (!v) throw model_error(path_.string() + ": key " + std::string(key) + " is not a string");
  return v;
}

std::optional<std::uint64_t> GgufFile::get_uint(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0) return std::nullopt;
  if (gguf_get_kv_type(ctx_.get(), id) == GGUF_TYPE_UINT64) return gguf_get_val_u64(ctx_.get(), id);
  const auto v = int_at(id);
  if (!v) throw model_error(path_.string() + ": key " + std::string(key) + " is not an integer");
  if (*v < 0) throw model_error(path_.string() + ": key " + std::string(key) + " is negative");
  return static_cast<std::uint64_t>(*v);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0) return std::nullopt;
  const auto v = float_at(id);
  if (!v) throw model_error(path_.string() + ": key " + std::string(key) + " is not a float");
  return v;
}

std::optional<bool> GgufFile::find_bool(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0 || gguf_get_kv_type(ctx_.get(), id) != GGUF_TYPE_BOOL) return std::nullopt;
  return gguf_get_val_bool(ctx_.get(), id);
}

std::optional<std::size_t> GgufFile::find_array_size(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0 || gguf_get_kv_type(ctx_.get(), id) != GGUF_TYPE_ARRAY) return std::nullopt;
  return gguf_get_arr_n(ctx_.get(), id);
}

std::vector<double> GgufFile::numeric_array(std::string_view key) const {
  const std::int64_t id = find_key(key);
  if (id < 0 || gguf_get_kv_type(ctx_.get(), id) != GGUF_TYPE_ARRAY) return {};
  return numeric_elements(ctx_.get(), id);
}

std::int64_t GgufFile::require_int(std::string_view key) const {
  const auto v = find_int(key);
  if (!v) throw model_error(path_.string() + ": missing integer key " + std::string(key));
  return *v;
}

TensorRef GgufFile::ref(std::int64_t i) const {
  const gguf_context* c = ctx_.get();
  TensorRef t;
  t.index = i;
  t.name = gguf_get_tensor_name(c, i);
  t.type = gguf_get_tensor_type(c, i);
  const std::int64_t* ne = gguf_get_tensor_ne(c, i);
  for (int d = 0; d < 4; ++d) t.ne[d] = ne[d];
  t.offset = gguf_get_data_offset(c) + gguf_get_tensor_offset(c, i);
  t.bytes = gguf_get_tensor_size(c, i);
  return t;
}

std::optional<TensorRef> GgufFile::tensor(std::string_view name) const {
  const std::int64_t i = gguf_find_tensor(ctx_.get(), std::string(name).c_str());
  if (i < 0) return std::nullopt;
  return ref(i);
}

std::vector<TensorRef> GgufFile::tensors() const {
  std::vector<TensorRef> out;
  for (std::int64_t i = 0; i < gguf_get_n_tensors(ctx_.get()); ++i) out.push_back(ref(i));
  return out;
}

}  // namespace clef::gguf
