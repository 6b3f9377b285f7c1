#include "vision/mmproj_info.hpp"

#include <cmath>

#include "util/error.hpp"

namespace clef::vision {
namespace {

/// clip.vision.image_mean / image_std: 3 numbers, or the reference's 0.5 when absent.
void triple(const gguf::GgufFile& f, const std::string& key, std::array<float, 3>& out) {
  if (!f.has(key)) return;
  const std::vector<double> v = f.numeric_array(key);
  if (v.size() != 3 || !std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2])) {
    throw model_error("mmproj '" + f.path().string() + "': " + key + " is not 3 finite numbers");
  }
  out = {static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

}  // namespace

bool MmprojInfo::reference_normalization() const noexcept {
  for (int c = 0; c < 3; ++c) {
    if (image_mean[c] != 0.5f || image_std[c] != 0.5f) return false;
  }
  return true;
}

MmprojInfo read_mmproj_info(const gguf::GgufFile& f) {
  const std::string mmproj = "mmproj '" + f.path().string() + "'";
  if (!f.find_bool("clip.has_vision_encoder").value_or(false)) {
    throw model_error(mmproj + " has no vision encoder");
  }
  MmprojInfo info;
  // In clip.cpp's order (clip_model_loader): the default key, then the vision one when it is
  // absent or empty. The other way round, a file with both would be refused by one reader and
  // loaded by the other.
  info.projector_type = f.find_string("clip.projector_type").value_or("");
  if (info.projector_type.empty())
    info.projector_type = f.find_string("clip.vision.projector_type").value_or("");
  if (info.projector_type != "qwen3vl_merger") {
    throw model_error(mmproj + ": projector type '" + info.projector_type +
                      "' is not supported; clef needs the Qwen3.5 vision projector "
                      "(qwen3vl_merger)");
  }
  // clip's loader takes these as optional and its qwen3vl graph asserts on them at the first
  // image (an abort of the whole server): check them now.
  for (const char* needed : {"v.patch_embd.bias", "v.position_embd.weight"}) {
    if (!f.tensor(needed)) {
      throw model_error(mmproj + " has no tensor " + needed +
                        ", which a qwen3vl_merger vision tower needs");
    }
  }
  if (f.tensor("v.class_embd")) {
    throw model_error(mmproj +
                      " has a v.class_embd tensor, which a qwen3vl_merger vision tower "
                      "has not");
  }
  const auto positive = [&](const char* key) -> std::optional<std::int64_t> {
    const std::optional<std::int64_t> v = f.find_int(key);
    if (v && *v <= 0) throw model_error(mmproj + ": " + key + " is " + std::to_string(*v));
    return v;
  };
  const std::optional<std::int64_t> patch = positive("clip.vision.patch_size");
  if (!patch) throw model_error(mmproj + " has no clip.vision.patch_size");
  info.processor.patch_size = static_cast<int>(*patch);
  if (const auto merge = positive("clip.vision.spatial_merge_size"))
    info.processor.merge_size = static_cast<int>(*merge);
  info.file_min_pixels = f.find_int("clip.vision.image_min_pixels");
  info.file_max_pixels = positive("clip.vision.image_max_pixels");
  if (info.file_min_pixels && *info.file_min_pixels < 0) {
    throw model_error(mmproj + ": clip.vision.image_min_pixels is negative");
  }
  if (info.file_min_pixels) info.processor.min_pixels = *info.file_min_pixels;
  if (info.file_max_pixels) info.processor.max_pixels = *info.file_max_pixels;
  if (info.processor.min_pixels > info.processor.max_pixels) {
    throw model_error(mmproj + ": image_min_pixels exceeds image_max_pixels");
  }
  info.projection_dim = static_cast<int>(f.find_int("clip.vision.projection_dim").value_or(0));
  info.n_embd = static_cast<int>(positive("clip.vision.embedding_length").value_or(0));
  info.n_head = static_cast<int>(positive("clip.vision.attention.head_count").value_or(0));
  // What clip's qwen3vl graph asserts on at the first image (an abort of the whole server, or a
  // division by zero heads): checked now. Reported inputs: head_count 3 and 0, patch_size 7,
  // embedding_length 48, layer_norm_epsilon -1 loaded and crashed the server at its first image.
  if (info.n_embd > 0 && info.n_head > 0 && info.n_embd % info.n_head != 0) {
    throw model_error(mmproj + ": clip.vision.embedding_length " + std::to_string(info.n_embd) +
                      " is not a multiple of clip.vision.attention.head_count " +
                      std::to_string(info.n_head));
  }
  const std::optional<double> eps = f.find_number("clip.vision.attention.layer_norm_epsilon");
  if (eps && !(std::isfinite(*eps) && *eps >= 0)) {
    throw model_error(mmproj + ": clip.vision.attention.layer_norm_epsilon is " +
                      std::to_string(*eps) + "; a norm's epsilon is a finite number >= 0");
  }
  if (const auto w = f.tensor("v.patch_embd.weight")) {
    if (w->ne[0] != *patch || w->ne[1] != *patch || (info.n_embd > 0 && w->ne[3] != info.n_embd)) {
      throw model_error(mmproj + ": v.patch_embd.weight is " + gguf::ne_string(w->ne) +
                        " but clip.vision.patch_size is " + std::to_string(*patch) +
                        " and clip.vision.embedding_length " + std::to_string(info.n_embd) +
                        " (expected [patch, patch, 3, embedding_length])");
    }
  }
  triple(f, "clip.vision.image_mean", info.image_mean);
  triple(f, "clip.vision.image_std", info.image_std);
  for (float s : info.image_std) {
    if (!(s > 0.0f)) throw model_error(mmproj + ": image_std must be positive");
  }
  return info;
}

MmprojInfo read_mmproj_info(const std::string& path) {
  return read_mmproj_info(gguf::GgufFile(path, /*header_only=*/true));
}

}  // namespace clef::vision
