#pragma once
// The vision tower: a qwen3vl mmproj run through llama.cpp's clip encoder on the reference
// processor's exact pixel tensor.
//
// Why clip and not the public mtmd_tokenize / mtmd_encode_chunk path: mtmd preprocesses the
// bitmap itself (its own smart resize capped at 4,096 tokens, letterboxing on black) and then
// normalizes in float32, x / 255.0f then (x - mean) / std, which differs from the reference's
// (x / 255 - 0.5) / 0.5 rounded once (normalize_sample) by one ulp on 128 of the 256 byte values.
// The clip API (tools/mtmd/clip.h: clip_image_f32 + clip_image_batch_encode, which is exactly what
// mtmd_encode_chunk calls) takes the normalized float image directly, so the tower's input tensor
// ("inp_raw", planar [3][H][W]) holds the reference's values bit for bit. clip.h is an internal
// header of the pinned llama.cpp tree; clef pins that tree, and this file is the only user.

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "ggml-backend.h"
#include "media/image.hpp"
#include "vision/mmproj_info.hpp"
#include "vision/processor_config.hpp"

namespace clef::vision {

/// How the tower is loaded and run.
struct TowerParams {
  int threads = 1;       ///< CPU threads for the encoder
  bool use_gpu = false;  ///< a GPU backend when one is available
  /// The GPU to use with use_gpu (the backbone's, device::Placement::gpu); null: clip's choice
  /// (the first GPU).
  ggml_backend_dev_t device = nullptr;
  bool flash_attention = false;  ///< flash attention in the encoder
  bool warmup = false;           ///< llama.cpp's warmup encode at load
  /// The device's driver bugs. With stale_descriptor_reads, before an image that no image encoded
  /// since the last load covers (width, height and frames each at most), the encoder is loaded
  /// afresh instead of letting ggml reallocate its compute memory: a fresh load frees the old
  /// memory together with its backend.
  device::Quirks quirks;
  bool verbose = false;  ///< clip's own log at info level (warnings and errors always)
  /// Use the mmproj's image_mean / image_std even when they are not the reference's 0.5 / 0.5
  /// (contract section 7: by default such a file only gets a warning and 0.5 / 0.5 are used).
  bool use_file_normalization = false;
  /// Receives warnings (mean/std differ from the reference). Default: stderr.
  std::function<void(const std::string&)> on_warning;
  /// Test and debug hook: called during encode() with the tensor the encoder graph receives
  /// (clip's "inp_raw", planar: all R rows, then G, then B; width * height * 3 floats).
  std::function<void(std::span<const float> planar, int width, int height)> on_input;
};

/// A loaded mmproj. Not thread-safe: one encode at a time.
class VisionTower {
 public:
  /// Opens `mmproj_path` for a backbone whose input embedding width is `text_n_embd`
  /// (llama_model_n_embd_inp): its metadata and tensor list are checked now, its weights are read
  /// at the first encode (loaded()). Throws clef::Error (model_error) when the file cannot be
  /// loaded, is not a qwen3vl_merger projector, or projects to another width.
  VisionTower(const std::string& mmproj_path, int text_n_embd, TowerParams params = {});
  ~VisionTower();
  VisionTower(const VisionTower&) = delete;
  VisionTower& operator=(const VisionTower&) = delete;

  const MmprojInfo& info() const noexcept;
  /// The processor settings images must be prepared with (patch, merge, min/max pixels).
  const ProcessorConfig& processor() const noexcept { return info().processor; }
  /// Width of one output row (== the backbone's n_embd).
  int n_embd() const noexcept;
  /// Whether the encoder runs its attention with flash attention (TowerParams::flash_attention).
  bool flash_attention() const noexcept;
  /// Mean / std the tower's input is normalized with (0.5 / 0.5 unless use_file_normalization).
  const std::array<float, 3>& mean() const noexcept;
  const std::array<float, 3>& std_dev() const noexcept;

  /// The normalized pixels of `resized` as the encoder takes them: interleaved RGB float32,
  /// width * height * 3 values, each (x / 255 - mean) / std computed in double and rounded once
  /// (normalize_sample for 0.5 / 0.5).
  std::vector<float> normalized_pixels(const media::RgbImage& resized) const;

  /// Encodes an image already at its processed size (both sides multiples of
  /// processor().factor(); preprocess with smart_resize + resize_bicubic). Returns
  /// (H/f) * (W/f) rows of n_embd() floats, row-major, image tokens row by row. Throws clef::Error
  /// (invalid_request for bad sides, internal when the encoder fails).
  std::vector<float> encode(const media::RgbImage& resized);

  /// Encodes one temporal patch of a video: `first` in the patch embedding's first temporal slot,
  /// `second` in the second (clip's two-frame input, the Conv3D's two temporal kernels); with
  /// `second` null, `first` in both (a still image, as encode(first)). Both frames at the same
  /// processed size. Returns (H/f) * (W/f) rows of n_embd() floats. Throws as encode().
  std::vector<float> encode(const media::RgbImage& first, const media::RgbImage* second);

  /// Gives back the compute memory the largest image so far made ggml reserve (its scheduler
  /// keeps buffers at their peak size): the clip context is created anew from the mmproj, which
  /// costs about one model load. Throws model_error when the file cannot be loaded again.
  void release_compute_memory();

  /// The weights are in memory (an image was encoded since the tower was made).
  bool loaded() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clef::vision
