#pragma once
// `clef make-test-model`: a complete random-weight clef model directory that libllama, mtmd and
// clef load like the real one:
//   DIR/backbone.gguf            qwen35 text backbone (write_backbone)
//   DIR/mmproj.gguf              qwen3vl_merger vision projector (write_mmproj)
//   DIR/joint_head.safetensors   BF16 joint schema head (write_head)
//   DIR/joint_head_config.json
// The same (preset, seed, vocabulary) gives byte-identical files.

#include <cstdint>
#include <filesystem>
#include <string>

#include "artifact/layout.hpp"
#include "testmodel/presets.hpp"

namespace clef::testmodel {

/// The tokenizer GGUF test models copy (llama.cpp's models/ggml-vocab-qwen35.gguf): from
/// $CLEF_VOCAB_GGUF, else beside the running executable (the build copies it next to `clef`),
/// else the pinned llama.cpp tree the build used.
std::filesystem::path default_vocab_gguf();

struct MakeOptions {
  std::filesystem::path dir;  ///< created if missing
  std::uint64_t seed = 0;
  std::string preset = "tiny";
  std::filesystem::path vocab_gguf = default_vocab_gguf();
  /// Artifact layout (artifact/layout.hpp). hf_head: the four files above. llama_cpp / ollama:
  /// DIR/model.gguf (backbone and head in one GGUF, same weights, artifact::write_layout) and
  /// DIR/mmproj.gguf.
  artifact::Layout layout = artifact::Layout::hf_head;
  /// Layout B only: the type of the head's 2-D matrices (BF16, Q8_0, ...).
  ggml_type head_matrix_type = GGML_TYPE_BF16;
  /// The backbone quantized by llama.cpp to "F16", "Q8_0" or "Q4_K_M" (quantize.hpp); empty: as
  /// written (mostly F32 for tiny, F16 for the larger presets).
  std::string quant;
};

struct MadeModel {
  std::filesystem::path backbone;  ///< model.gguf for layouts B and C
  std::filesystem::path mmproj;
  std::filesystem::path head;         ///< empty for layouts B and C
  std::filesystem::path head_config;  ///< empty for layouts B and C
  Preset preset;
  std::uint32_t n_vocab = 0;
};

/// Writes the four files. Throws clef::Error (invalid_request for an unknown preset, model_error
/// for an unreadable vocabulary GGUF) and std::runtime_error / std::filesystem::filesystem_error
/// on I/O failure.
MadeModel make_test_model(const MakeOptions& options);

}  // namespace clef::testmodel
