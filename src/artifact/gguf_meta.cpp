#include "artifact/gguf_meta.hpp"

#include <fstream>

#include "util/error.hpp"

namespace clef::artifact {

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

GgufMeta::GgufMeta(const std::filesystem::path& path, bool header_only) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw model_error(path.string() + ": no such file");
  }
  file_size_ = std::filesystem::file_size(path, ec);
  char magic[4] = {0, 0, 0, 0};
  std::ifstream(path, std::ios::binary).read(magic, 4);
  if (std::string_view(magic, 4) != "GGUF") {
    throw model_error(path.string() + ": not a GGUF file (no GGUF magic)");
  }
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  ctx_.reset(gguf_init_from_file(path.string().c_str(), params));
  if (!ctx_) throw model_error(path.string() + ": the GGUF header is invalid or truncated");
  for (std::int64_t i = 0; !header_only && i < gguf_get_n_tensors(ctx_.get()); ++i) {
    const GgufTensorRef t = ref(i);
    if (t.offset + t.bytes > file_size_) {
      throw model_error(path.string() + ": tensor \"" + t.name +
                        "\" lies outside the file (truncated download?)");
    }
  }
}

bool GgufMeta::has(std::string_view key) const {
  return gguf_find_key(ctx_.get(), std::string(key).c_str()) >= 0;
}

std::optional<gguf_type> GgufMeta::key_type(std::string_view key) const {
  const std::int64_t id = gguf_find_key(ctx_.get(), std::string(key).c_str());
  if (id < 0) return std::nullopt;
  return gguf_get_kv_type(ctx_.get(), id);
}

std::optional<std::string> GgufMeta::get_string(std::string_view key) const {
  const std::int64_t id = gguf_find_key(ctx_.get(), std::string(key).c_str());
  if (id < 0) return std::nullopt;
  if (gguf_get_kv_type(ctx_.get(), id) != GGUF_TYPE_STRING) {
    throw model_error(path_.string() + ": key " + std::string(key) + " is not a string");
  }
  return std::string(gguf_get_val_str(ctx_.get(), id));
}

std::optional<std::uint64_t> GgufMeta::get_uint(std::string_view key) const {
  const std::int64_t id = gguf_find_key(ctx_.get(), std::string(key).c_str());
  if (id < 0) return std::nullopt;
  const gguf_context* c = ctx_.get();
  std::int64_t v = 0;
  switch (gguf_get_kv_type(c, id)) {
    case GGUF_TYPE_UINT8:
      v = gguf_get_val_u8(c, id);
      break;
    case GGUF_TYPE_INT8:
      v = gguf_get_val_i8(c, id);
      break;
    case GGUF_TYPE_UINT16:
      v = gguf_get_val_u16(c, id);
      break;
    case GGUF_TYPE_INT16:
      v = gguf_get_val_i16(c, id);
      break;
    case GGUF_TYPE_UINT32:
      v = gguf_get_val_u32(c, id);
      break;
    case GGUF_TYPE_INT32:
      v = gguf_get_val_i32(c, id);
      break;
    case GGUF_TYPE_UINT64:
      return gguf_get_val_u64(c, id);
    case GGUF_TYPE_INT64:
      v = gguf_get_val_i64(c, id);
      break;
    default:
      throw model_error(path_.string() + ": key " + std::string(key) + " is not an integer");
  }
  if (v < 0) throw model_error(path_.string() + ": key " + std::string(key) + " is negative");
  return static_cast<std::uint64_t>(v);
}

std::optional<double> GgufMeta::get_float(std::string_view key) const {
  const std::int64_t id = gguf_find_key(ctx_.get(), std::string(key).c_str());
  if (id < 0) return std::nullopt;
  switch (gguf_get_kv_type(ctx_.get(), id)) {
    case GGUF_TYPE_FLOAT32:
      return gguf_get_val_f32(ctx_.get(), id);
    case GGUF_TYPE_FLOAT64:
      return gguf_get_val_f64(ctx_.get(), id);
    default:
      throw model_error(path_.string() + ": key " + std::string(key) + " is not a float");
  }
}

std::vector<std::string> GgufMeta::keys() const {
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < gguf_get_n_kv(ctx_.get()); ++i) {
    out.emplace_back(gguf_get_key(ctx_.get(), i));
  }
  return out;
}

GgufTensorRef GgufMeta::ref(std::int64_t i) const {
  const gguf_context* c = ctx_.get();
  GgufTensorRef t;
  t.index = i;
  t.name = gguf_get_tensor_name(c, i);
  t.type = gguf_get_tensor_type(c, i);
  const std::int64_t* ne = gguf_get_tensor_ne(c, i);
  for (int d = 0; d < 4; ++d) t.ne[d] = ne[d];
  t.offset = gguf_get_data_offset(c) + gguf_get_tensor_offset(c, i);
  t.bytes = gguf_get_tensor_size(c, i);
  return t;
}

std::optional<GgufTensorRef> GgufMeta::tensor(std::string_view name) const {
  const std::int64_t i = gguf_find_tensor(ctx_.get(), std::string(name).c_str());
  if (i < 0) return std::nullopt;
  return ref(i);
}

std::vector<GgufTensorRef> GgufMeta::tensors() const {
  std::vector<GgufTensorRef> out;
  for (std::int64_t i = 0; i < gguf_get_n_tensors(ctx_.get()); ++i) out.push_back(ref(i));
  return out;
}

void copy_kv(gguf_context* dst, const gguf_context* src, std::int64_t id,
             const std::string& new_key) {
  const char* key = new_key.c_str();
  switch (gguf_get_kv_type(src, id)) {
    case GGUF_TYPE_UINT8:
      gguf_set_val_u8(dst, key, gguf_get_val_u8(src, id));
      break;
    case GGUF_TYPE_INT8:
      gguf_set_val_i8(dst, key, gguf_get_val_i8(src, id));
      break;
    case GGUF_TYPE_UINT16:
      gguf_set_val_u16(dst, key, gguf_get_val_u16(src, id));
      break;
    case GGUF_TYPE_INT16:
      gguf_set_val_i16(dst, key, gguf_get_val_i16(src, id));
      break;
    case GGUF_TYPE_UINT32:
      gguf_set_val_u32(dst, key, gguf_get_val_u32(src, id));
      break;
    case GGUF_TYPE_INT32:
      gguf_set_val_i32(dst, key, gguf_get_val_i32(src, id));
      break;
    case GGUF_TYPE_FLOAT32:
      gguf_set_val_f32(dst, key, gguf_get_val_f32(src, id));
      break;
    case GGUF_TYPE_UINT64:
      gguf_set_val_u64(dst, key, gguf_get_val_u64(src, id));
      break;
    case GGUF_TYPE_INT64:
      gguf_set_val_i64(dst, key, gguf_get_val_i64(src, id));
      break;
    case GGUF_TYPE_FLOAT64:
      gguf_set_val_f64(dst, key, gguf_get_val_f64(src, id));
      break;
    case GGUF_TYPE_BOOL:
      gguf_set_val_bool(dst, key, gguf_get_val_bool(src, id));
      break;
    case GGUF_TYPE_STRING:
      gguf_set_val_str(dst, key, gguf_get_val_str(src, id));
      break;
    case GGUF_TYPE_ARRAY: {
      const gguf_type elem = gguf_get_arr_type(src, id);
      const std::size_t n = gguf_get_arr_n(src, id);
      if (elem == GGUF_TYPE_STRING) {
        std::vector<const char*> strs(n);
        for (std::size_t i = 0; i < n; ++i) strs[i] = gguf_get_arr_str(src, id, i);
        gguf_set_arr_str(dst, key, strs.data(), n);
      } else if (elem == GGUF_TYPE_ARRAY) {
        throw model_error(std::string("GGUF key ") + gguf_get_key(src, id) +
                          " is a nested array, which clef cannot copy");
      } else {
        gguf_set_arr_data(dst, key, elem, gguf_get_arr_data(src, id), n);
      }
      break;
    }
    default:
      throw model_error(std::string("GGUF key ") + gguf_get_key(src, id) +
                        " has an unknown value type");
  }
}

}  // namespace clef::artifact
