#pragma once
// Writes a random-weight qwen35 backbone GGUF that libllama loads like Qwen3.5: hybrid layers
// (Gated DeltaNet, every full_attention_interval-th layer gated full attention), interleaved
// M-RoPE sections, untied output.weight, and the tokenizer keys of a vocabulary GGUF.
// Tensor names/shapes: third_party/llama.cpp/src/models/qwen35.cpp load_arch_tensors.

#include <cstdint>
#include <filesystem>
#include <string>

#include "testmodel/presets.hpp"

namespace clef::testmodel {

/// Writes `path`. Every `tokenizer.*` key of `vocab_gguf` is copied, then the record's special
/// tokens it lacks (record_special_tokens()) are appended as CONTROL tokens; n_vocab is the
/// resulting token count (151,936 + 6 for the pinned test vocabulary). Returns n_vocab. Throws
/// clef::Error (model_error) when `vocab_gguf` is not a readable GGUF with tokenizer.ggml.tokens,
/// std::runtime_error on I/O failure.
std::uint32_t write_backbone(const std::filesystem::path& path, const BackboneShape& shape,
                             const std::string& description, std::uint64_t seed,
                             const std::filesystem::path& vocab_gguf);

}  // namespace clef::testmodel
