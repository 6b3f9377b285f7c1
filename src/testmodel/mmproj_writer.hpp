#pragma once
// Writes a random-weight `qwen3vl_merger` mmproj GGUF (llama.cpp mtmd): the Qwen3-VL / Qwen3.5
// vision tower at a small size. Keys and tensors follow third_party/llama.cpp/tools/mtmd/clip.cpp
// (load_hparams, load_tensors) and models/qwen3vl.cpp; no deepstack layers (Qwen3.5's vision
// config has deepstack_visual_indexes = []).

#include <cstdint>
#include <filesystem>
#include <string>

#include "testmodel/presets.hpp"

namespace clef::testmodel {

/// Writes `path` with projection output dim `text_n_embd` (must equal the backbone's n_embd for
/// mtmd_init_from_file to accept the pair). Image mean/std are 0.5/0.5 (the reference processor).
/// Throws std::runtime_error on I/O failure.
void write_mmproj(const std::filesystem::path& path, const VisionShape& shape,
                  std::uint32_t text_n_embd, const std::string& description, std::uint64_t seed);

}  // namespace clef::testmodel
