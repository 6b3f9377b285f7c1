#include "vision/mmproj_info.hpp"

#include <memory>

#include "gguf.h"
#include "util/error.hpp"

namespace clef::vision {
namespace {

struct GgufFree {
  void operator()(gguf_context* c) const { gguf_free(c); }
};

std::string str_or(const gguf_context* kv, const char* key, std::string fallback) {
  const std::int64_t id = gguf_find_key(kv, key);
  if (id < 0 || gguf_get_kv_type(kv, id) != GGUF_TYPE_STRING) return fallback;
  return gguf_get_val_str(kv, id);
}

bool u32(const gguf_context* kv, const char* key, std::uint32_t& out) {
  const std::int64_t id = gguf_find_key(kv, key);
  if (id < 0 || gguf_get_kv_type(kv, id) != GGUF_TYPE_UINT32) return false;
  out = gguf_get_val_u32(kv, id);
  return true;
}

void triple(const gguf_context* kv, const char* key, std::array<float, 3>& out,
            const std::string& path) {
  const std::int64_t id = gguf_find_key(kv, key);
  if (id < 0) return;
  if (gguf_get_kv_type(kv, id) != GGUF_TYPE_ARRAY ||
      gguf_get_arr_type(kv, id) != GGUF_TYPE_FLOAT32 || gguf_get_arr_n(kv, id) != 3) {
    throw model_error("mmproj '" + path + "': " + key + " is not 3 float32 values");
  }
  const auto* v = static_cast<const float*>(gguf_get_arr_data(kv, id));
  out = {v[0], v[1], v[2]};
}

}  // namespace

bool MmprojInfo::reference_normalization() const noexcept {
  for (int c = 0; c < 3; ++c) {
    if (image_mean[c] != 0.5f || image_std[c] != 0.5f) return false;
  }
  return true;
}

MmprojInfo read_mmproj_info(const std::string& path) {
  gguf_init_params params{};
  params.no_alloc = true;
  params.ctx = nullptr;
  const std::unique_ptr<gguf_context, GgufFree> kv(gguf_init_from_file(path.c_str(), params));
  if (!kv) throw model_error("cannot read mmproj GGUF '" + path + "'");
  const gguf_context* k = kv.get();
  const std::int64_t has_vision = gguf_find_key(k, "clip.has_vision_encoder");
  if (has_vision < 0 || gguf_get_kv_type(k, has_vision) != GGUF_TYPE_BOOL ||
      !gguf_get_val_bool(k, has_vision)) {
    throw model_error("mmproj '" + path + "' has no vision encoder");
  }
  MmprojInfo info;
  // In clip.cpp's order (clip_model_loader): the default key, then the vision one when it is
  // absent or empty. The other way round, a file with both would be refused by one reader and
  // loaded by the other.
  info.projector_type = str_or(k, "clip.projector_type", "");
  if (info.projector_type.empty())
    info.projector_type = str_or(k, "clip.vision.projector_type", "");
  if (info.projector_type != "qwen3vl_merger") {
    throw model_error("mmproj '" + path + "' has projector type '" + info.projector_type +
                      "'; clef needs a qwen3vl_merger (Qwen3.5 vision) projector");
  }
  // clip's loader takes these as optional and its qwen3vl graph asserts on them at the first
  // image (an abort of the whole server): check them now.
  for (const char* needed : {"v.patch_embd.bias", "v.position_embd.weight"}) {
    if (gguf_find_tensor(k, needed) < 0) {
      throw model_error("mmproj '" + path + "' has no tensor " + needed +
                        ", which a qwen3vl_merger vision tower needs");
    }
  }
  if (gguf_find_tensor(k, "v.class_embd") >= 0) {
    throw model_error("mmproj '" + path +
                      "' has a v.class_embd tensor, which a qwen3vl_merger vision tower has not");
  }
  std::uint32_t v = 0;
  if (!u32(k, "clip.vision.patch_size", v) || v == 0) {
    throw model_error("mmproj '" + path + "' has no clip.vision.patch_size");
  }
  info.processor.patch_size = static_cast<int>(v);
  if (u32(k, "clip.vision.spatial_merge_size", v)) {
    if (v == 0) throw model_error("mmproj '" + path + "': spatial_merge_size is 0");
    info.processor.merge_size = static_cast<int>(v);
  }
  if (u32(k, "clip.vision.image_min_pixels", v)) info.processor.min_pixels = v;
  if (u32(k, "clip.vision.image_max_pixels", v)) info.processor.max_pixels = v;
  if (info.processor.min_pixels > info.processor.max_pixels) {
    throw model_error("mmproj '" + path + "': image_min_pixels exceeds image_max_pixels");
  }
  if (u32(k, "clip.vision.projection_dim", v)) info.projection_dim = static_cast<int>(v);
  if (u32(k, "clip.vision.embedding_length", v)) info.n_embd = static_cast<int>(v);
  if (u32(k, "clip.vision.attention.head_count", v)) info.n_head = static_cast<int>(v);
  triple(k, "clip.vision.image_mean", info.image_mean, path);
  triple(k, "clip.vision.image_std", info.image_std, path);
  for (float s : info.image_std) {
    if (!(s > 0.0f)) throw model_error("mmproj '" + path + "': image_std must be positive");
  }
  return info;
}

}  // namespace clef::vision
