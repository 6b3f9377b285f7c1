#include "info/mmproj_info.hpp"

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
  m.vision = vision::read_mmproj_info(f);
  const auto u32 = [&](const std::string& key) {
    return static_cast<std::uint32_t>(f.require_int(key));
  };
  m.image_size = u32("clip.vision.image_size");
  m.n_layer = u32("clip.vision.block_count");
  m.n_ff = u32("clip.vision.feed_forward_length");
  for (const auto& [key, value] : {std::pair{"clip.vision.embedding_length", m.vision.n_embd},
                                   {"clip.vision.attention.head_count", m.vision.n_head},
                                   {"clip.vision.projection_dim", m.vision.projection_dim}}) {
    if (value <= 0) throw model_error(file + ": missing integer key " + key);
  }
  if (!f.has("clip.vision.image_mean") || !f.has("clip.vision.image_std")) {
    throw model_error(file + ": clip.vision.image_mean/image_std need 3 values each");
  }

  const auto out_bias = f.tensor("mm.2.bias");
  if (!f.tensor("mm.0.weight") || !f.tensor("mm.2.weight") || !out_bias) {
    throw model_error(file + ": missing merger tensors mm.0/mm.2");
  }
  for (std::uint32_t il = 0; il < m.n_layer; ++il) {
    if (f.tensor("v.deepstack." + std::to_string(il) + ".fc2.weight")) ++m.n_deepstack;
  }
  m.output_dim = static_cast<std::uint32_t>(out_bias->ne[0]) * (1 + m.n_deepstack);
  m.n_tensors = f.tensors().size();

  if (!m.vision.reference_normalization()) {
    m.warnings.push_back(file +
                         ": image mean/std are not 0.5/0.5 (the reference processor's); "
                         "a converter may have used CLIP's defaults");
  }
  return m;
}

}  // namespace clef::info
