#include "info/mmproj_info.hpp"

#include <cmath>

#include "util/error.hpp"

namespace clef::info {

MmprojInfo read_mmproj_info(const gguf::GgufFile& f) {
  const std::string file = f.path().string();
  MmprojInfo m;
  m.path = f.path();
  m.file_size = f.file_size();
  const std::string arch = f.find_string("general.architecture").value_or("");
  if (arch != "clip") {
    throw model_error(file + ": architecture '" + arch + "' is not an mmproj (expected clip)");
  }
  if (!f.find_bool("clip.has_vision_encoder").value_or(false)) {
    throw model_error(file + ": the mmproj has no vision encoder");
  }
  m.projector_type = f.find_string("clip.projector_type")
                         .value_or(f.find_string("clip.vision.projector_type").value_or(""));
  if (m.projector_type != "qwen3vl_merger") {
    throw model_error(file + ": projector type '" + m.projector_type +
                      "' is not supported; clef needs the Qwen3.5 vision projector "
                      "(qwen3vl_merger)");
  }
  const auto u32 = [&](const std::string& key) {
    return static_cast<std::uint32_t>(f.require_int(key));
  };
  m.image_size = u32("clip.vision.image_size");
  m.patch_size = u32("clip.vision.patch_size");
  m.merge_size =
      static_cast<std::uint32_t>(f.find_int("clip.vision.spatial_merge_size").value_or(2));
  m.n_embd = u32("clip.vision.embedding_length");
  m.n_layer = u32("clip.vision.block_count");
  m.n_head = u32("clip.vision.attention.head_count");
  m.n_ff = u32("clip.vision.feed_forward_length");
  m.projection_dim = u32("clip.vision.projection_dim");
  m.image_mean = f.numeric_array("clip.vision.image_mean");
  m.image_std = f.numeric_array("clip.vision.image_std");
  if (m.image_mean.size() < 3 || m.image_std.size() < 3) {
    throw model_error(file + ": clip.vision.image_mean/image_std need 3 values each");
  }
  if (f.has("clip.vision.image_min_pixels"))
    m.min_pixels = f.find_int("clip.vision.image_min_pixels");
  if (f.has("clip.vision.image_max_pixels"))
    m.max_pixels = f.find_int("clip.vision.image_max_pixels");

  const auto out_bias = f.tensor("mm.2.bias");
  if (!f.tensor("mm.0.weight") || !f.tensor("mm.2.weight") || !out_bias) {
    throw model_error(file + ": missing merger tensors mm.0/mm.2");
  }
  for (std::uint32_t il = 0; il < m.n_layer; ++il) {
    if (f.tensor("v.deepstack." + std::to_string(il) + ".fc2.weight")) ++m.n_deepstack;
  }
  m.output_dim = static_cast<std::uint32_t>(out_bias->ne[0]) * (1 + m.n_deepstack);
  m.n_tensors = f.tensors().size();

  for (int i = 0; i < 3; ++i) {
    if (std::fabs(m.image_mean[i] - 0.5) > 1e-6 || std::fabs(m.image_std[i] - 0.5) > 1e-6) {
      m.warnings.push_back(file +
                           ": image mean/std are not 0.5/0.5 (the reference processor's); "
                           "a converter may have used CLIP's defaults");
      break;
    }
  }
  return m;
}

}  // namespace clef::info
