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

#include "testmodel/presets.hpp"

namespace clef::testmodel {

/// The tokenizer GGUF of the pinned llama.cpp tree (models/ggml-vocab-qwen35.gguf), as configured
/// at build time.
std::filesystem::path default_vocab_gguf();

struct MakeOptions {
  std::filesystem::path dir;  ///< created if missing
  std::uint64_t seed = 0;
  std::string preset = "tiny";
  std::filesystem::path vocab_gguf = default_vocab_gguf();
};

struct MadeModel {
  std::filesystem::path backbone;
  std::filesystem::path mmproj;
  std::filesystem::path head;
  std::filesystem::path head_config;
  Preset preset;
  std::uint32_t n_vocab = 0;
};

/// Writes the four files. Throws clef::Error (invalid_request for an unknown preset, model_error
/// for an unreadable vocabulary GGUF) and std::runtime_error / std::filesystem::filesystem_error
/// on I/O failure.
MadeModel make_test_model(const MakeOptions& options);

}  // namespace clef::testmodel
