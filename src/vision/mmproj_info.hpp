#pragma once
// What a qwen3vl mmproj GGUF says about its vision tower and image preprocessing, read from its
// metadata only: the one reader of an mmproj's keys (the vision tower, the memory plan and
// `clef info` all use it).

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "gguf/gguf_file.hpp"
#include "vision/processor_config.hpp"

namespace clef::vision {

/// Preprocessing settings of an mmproj (llama.cpp tools/mtmd/clip-impl.h keys).
struct MmprojInfo {
  std::string
      projector_type;  ///< clip.projector_type, else clip.vision.projector_type (clip's order)
  /// patch_size from clip.vision.patch_size, merge_size from clip.vision.spatial_merge_size
  /// (default 2), min/max pixels from clip.vision.image_min_pixels / image_max_pixels when the file
  /// has them, else the reference processor's 65,536 / 16,777,216 (llama.cpp ignores these keys
  /// for qwen3vl and caps at 4,096 tokens; clef follows the reference, contract section 7).
  ProcessorConfig processor;
  std::array<float, 3> image_mean{0.5f, 0.5f, 0.5f};  ///< clip.vision.image_mean (0.5 if absent)
  std::array<float, 3> image_std{0.5f, 0.5f, 0.5f};   ///< clip.vision.image_std (0.5 if absent)
  int projection_dim = 0;                             ///< clip.vision.projection_dim
  int n_embd = 0;  ///< clip.vision.embedding_length: the tower's width (0 if absent)
  int n_head = 0;  ///< clip.vision.attention.head_count (0 if absent)
  /// clip.vision.image_min_pixels / image_max_pixels as the file has them (nullopt: absent, the
  /// processor's defaults hold).
  std::optional<std::int64_t> file_min_pixels, file_max_pixels;

  /// True when mean and std are the reference processor's 0.5 / 0.5 on every channel.
  bool reference_normalization() const noexcept;
};

/// Reads `file`'s metadata (no tensor data). Throws clef::Error (model_error) naming the file when
/// it has no vision encoder, its projector is not qwen3vl_merger (clip.projector_type, else
/// clip.vision.projector_type: clip.cpp's order), it lacks a tensor the qwen3vl graph asserts on
/// (v.patch_embd.bias, v.position_embd.weight) or has v.class_embd, its patch size is missing or
/// 0, its merge size, width or head count 0 or negative, a width that is not a multiple of the
/// head count, a norm epsilon that is negative or not finite, a patch embedding whose shape is not
/// [patch, patch, 3, width], min pixels over max pixels, image_mean / image_std not 3 finite
/// numbers or a std not positive: all that clip's graph would assert on at the first image.
MmprojInfo read_mmproj_info(const gguf::GgufFile& file);

/// read_mmproj_info of the header of the GGUF at `path`; also throws model_error when it is not
/// a readable GGUF.
MmprojInfo read_mmproj_info(const std::string& path);

}  // namespace clef::vision
