#pragma once
// What an mmproj GGUF is, and whether clef can use it: a llama.cpp clip file with a vision
// encoder and projector type qwen3vl_merger (the Qwen3-VL / Qwen3.5 vision tower).

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_file.hpp"

namespace clef::info {

struct MmprojInfo {
  std::filesystem::path path;
  std::uintmax_t file_size = 0;
  std::string projector_type;
  std::uint32_t image_size = 0;
  std::uint32_t patch_size = 0;
  std::uint32_t merge_size = 2;  ///< clip.vision.spatial_merge_size (clip.cpp default 2)
  std::uint32_t n_embd = 0;      ///< vision tower width
  std::uint32_t n_layer = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_ff = 0;
  std::uint32_t projection_dim = 0;  ///< clip.vision.projection_dim key
  std::uint32_t n_deepstack = 0;     ///< layers with v.deepstack.N.* tensors
  std::uint32_t output_dim = 0;  ///< rows fed to the text model: mm.2.bias size x (1 + n_deepstack)
  std::vector<double> image_mean, image_std;
  std::optional<std::int64_t> min_pixels, max_pixels;  ///< clip.vision.image_{min,max}_pixels
  std::size_t n_tensors = 0;
  std::vector<std::string> warnings;  ///< usable but suspicious (e.g. mean/std not 0.5)
};

/// Reads and validates an mmproj. Throws model_error when the file is not a clip GGUF with a vision
/// encoder, its projector type is not qwen3vl_merger, a required key or the mm.2 merger tensors
/// are missing.
MmprojInfo read_mmproj_info(const gguf::GgufFile& file);

}  // namespace clef::info
