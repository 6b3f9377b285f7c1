#include "gguf/copy_keys.hpp"

#include <vector>

#include "util/error.hpp"

namespace clef::gguf {

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

std::size_t copy_keys_with_prefix(gguf_context* dst, const gguf_context* src,
                                  std::string_view prefix) {
  std::size_t copied = 0;
  for (std::int64_t id = 0; id < gguf_get_n_kv(src); ++id) {
    const char* key = gguf_get_key(src, id);
    if (std::string_view(key).starts_with(prefix)) {
      copy_kv(dst, src, id, key);
      ++copied;
    }
  }
  return copied;
}

}  // namespace clef::gguf
