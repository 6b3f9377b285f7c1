#include "info/gguf_file.hpp"

#include <fstream>

#include "util/error.hpp"

namespace clef::info {

GgufFile::GgufFile(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw model_error(path.string() + ": no such file");
  }
  file_size_ = std::filesystem::file_size(path, ec);
  char magic[4] = {};
  std::ifstream f(path, std::ios::binary);
  f.read(magic, 4);
  if (!f || std::string(magic, 4) != "GGUF") {
    throw model_error(path.string() + " is not a GGUF file (no GGUF magic)");
  }
  gguf_init_params params{};
  params.no_alloc = true;
  params.ctx = nullptr;
  ctx_.reset(gguf_init_from_file(path.string().c_str(), params));
  if (!ctx_) throw model_error(path.string() + ": damaged or unsupported GGUF file");
}

bool GgufFile::has(const std::string& key) const {
  return gguf_find_key(raw(), key.c_str()) >= 0;
}

std::optional<std::string> GgufFile::get_string(const std::string& key) const {
  const std::int64_t id = gguf_find_key(raw(), key.c_str());
  if (id < 0 || gguf_get_kv_type(raw(), id) != GGUF_TYPE_STRING) return std::nullopt;
  return std::string(gguf_get_val_str(raw(), id));
}

std::optional<std::int64_t> GgufFile::get_int(const std::string& key) const {
  const std::int64_t id = gguf_find_key(raw(), key.c_str());
  if (id < 0) return std::nullopt;
  switch (gguf_get_kv_type(raw(), id)) {
    case GGUF_TYPE_UINT8:
      return gguf_get_val_u8(raw(), id);
    case GGUF_TYPE_INT8:
      return gguf_get_val_i8(raw(), id);
    case GGUF_TYPE_UINT16:
      return gguf_get_val_u16(raw(), id);
    case GGUF_TYPE_INT16:
      return gguf_get_val_i16(raw(), id);
    case GGUF_TYPE_UINT32:
      return gguf_get_val_u32(raw(), id);
    case GGUF_TYPE_INT32:
      return gguf_get_val_i32(raw(), id);
    case GGUF_TYPE_UINT64:
      return static_cast<std::int64_t>(gguf_get_val_u64(raw(), id));
    case GGUF_TYPE_INT64:
      return gguf_get_val_i64(raw(), id);
    default:
      return std::nullopt;
  }
}

std::optional<double> GgufFile::get_float(const std::string& key) const {
  const std::int64_t id = gguf_find_key(raw(), key.c_str());
  if (id < 0) return std::nullopt;
  switch (gguf_get_kv_type(raw(), id)) {
    case GGUF_TYPE_FLOAT32:
      return gguf_get_val_f32(raw(), id);
    case GGUF_TYPE_FLOAT64:
      return gguf_get_val_f64(raw(), id);
    default: {
      const auto i = get_int(key);
      return i ? std::optional<double>(static_cast<double>(*i)) : std::nullopt;
    }
  }
}

std::optional<bool> GgufFile::get_bool(const std::string& key) const {
  const std::int64_t id = gguf_find_key(raw(), key.c_str());
  if (id < 0 || gguf_get_kv_type(raw(), id) != GGUF_TYPE_BOOL) return std::nullopt;
  return gguf_get_val_bool(raw(), id);
}

std::optional<std::size_t> GgufFile::array_size(const std::string& key) const {
  const std::int64_t id = gguf_find_key(raw(), key.c_str());
  if (id < 0 || gguf_get_kv_type(raw(), id) != GGUF_TYPE_ARRAY) return std::nullopt;
  return gguf_get_arr_n(raw(), id);
}

std::vector<double> GgufFile::get_array(const std::string& key) const {
  const std::int64_t id = gguf_find_key(raw(), key.c_str());
  std::vector<double> out;
  if (id < 0 || gguf_get_kv_type(raw(), id) != GGUF_TYPE_ARRAY) return out;
  const std::size_t n = gguf_get_arr_n(raw(), id);
  const gguf_type t = gguf_get_arr_type(raw(), id);
  if (t == GGUF_TYPE_STRING || t == GGUF_TYPE_ARRAY) return out;
  const void* data = gguf_get_arr_data(raw(), id);
  for (std::size_t i = 0; i < n; ++i) {
    switch (t) {
      case GGUF_TYPE_UINT8:
        out.push_back(static_cast<const std::uint8_t*>(data)[i]);
        break;
      case GGUF_TYPE_INT8:
        out.push_back(static_cast<const std::int8_t*>(data)[i]);
        break;
      case GGUF_TYPE_BOOL:
        out.push_back(static_cast<const std::int8_t*>(data)[i] ? 1 : 0);
        break;
      case GGUF_TYPE_UINT16:
        out.push_back(static_cast<const std::uint16_t*>(data)[i]);
        break;
      case GGUF_TYPE_INT16:
        out.push_back(static_cast<const std::int16_t*>(data)[i]);
        break;
      case GGUF_TYPE_UINT32:
        out.push_back(static_cast<const std::uint32_t*>(data)[i]);
        break;
      case GGUF_TYPE_INT32:
        out.push_back(static_cast<const std::int32_t*>(data)[i]);
        break;
      case GGUF_TYPE_FLOAT32:
        out.push_back(static_cast<const float*>(data)[i]);
        break;
      case GGUF_TYPE_UINT64:
        out.push_back(static_cast<double>(static_cast<const std::uint64_t*>(data)[i]));
        break;
      case GGUF_TYPE_INT64:
        out.push_back(static_cast<double>(static_cast<const std::int64_t*>(data)[i]));
        break;
      case GGUF_TYPE_FLOAT64:
        out.push_back(static_cast<const double*>(data)[i]);
        break;
      default:
        return {};
    }
  }
  return out;
}

std::int64_t GgufFile::require_int(const std::string& key) const {
  const auto v = get_int(key);
  if (!v) throw model_error(path_.string() + ": missing integer key " + key);
  return *v;
}

std::optional<GgufTensor> GgufFile::tensor(const std::string& name) const {
  const std::int64_t id = gguf_find_tensor(raw(), name.c_str());
  if (id < 0) return std::nullopt;
  GgufTensor t;
  t.name = name;
  t.type = gguf_get_tensor_type(raw(), id);
  const std::int64_t* ne = gguf_get_tensor_ne(raw(), id);
  int n_dims = GGML_MAX_DIMS;
  while (n_dims > 1 && ne[n_dims - 1] == 1) --n_dims;
  t.ne.assign(ne, ne + n_dims);
  t.bytes = gguf_get_tensor_size(raw(), id);
  return t;
}

std::vector<GgufTensor> GgufFile::tensors() const {
  std::vector<GgufTensor> out;
  for (std::int64_t i = 0; i < gguf_get_n_tensors(raw()); ++i) {
    out.push_back(*tensor(gguf_get_tensor_name(raw(), i)));
  }
  return out;
}

std::string type_name(ggml_type type) {
  return ggml_type_name(type);
}

}  // namespace clef::info
