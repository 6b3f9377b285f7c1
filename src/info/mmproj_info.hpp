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
#include "vision/mmproj_info.hpp"

namespace clef::info {

/// An mmproj as `clef info` reports it: what the vision tower reads of it
/// (vision::read_mmproj_info) and the sizes only the report shows.
struct MmprojInfo {
  std::filesystem::path path;
  std::uintmax_t file_size = 0;
  vision::MmprojInfo vision;  ///< projector, patch and merge size, width, heads, mean/std, pixels
  std::uint32_t image_size = 0;
  std::uint32_t n_layer = 0;
  std::uint32_t n_ff = 0;
  std::uint32_t n_deepstack = 0;  ///< layers with v.deepstack.N.* tensors
  std::uint32_t output_dim = 0;  ///< rows fed to the text model: mm.2.bias size x (1 + n_deepstack)
  std::size_t n_tensors = 0;
  std::vector<std::string> warnings;  ///< usable but suspicious (e.g. mean/std not 0.5)
};

/// Reads and validates an mmproj. Throws model_error when the file is not a clip GGUF, when
/// vision::read_mmproj_info refuses it, or a key the report shows (image size, block count,
/// feed-forward length, width, heads, projection dim) or the mm.2 merger tensors are missing.
MmprojInfo read_mmproj_info(const gguf::GgufFile& file);

}  // namespace clef::info
