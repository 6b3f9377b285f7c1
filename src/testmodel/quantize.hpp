#pragma once
// Quantizing a test model's backbone as the published files are quantized: llama.cpp's own
// llama_model_quantize (llama-quantize's mixture per type, e.g. Q4_K_M keeps some tensors at Q6_K;
// tensors whose rows do not fit a block fall back as llama.cpp decides).

#include <filesystem>
#include <string>

namespace clef::testmodel {

/// Rewrites the GGUF at `path` with its tensors quantized to `type`: "F16", "Q8_0" or "Q4_K_M".
/// Throws clef::Error (invalid_request) for another type, model_error when llama.cpp fails.
void quantize_backbone(const std::filesystem::path& path, const std::string& type);

}  // namespace clef::testmodel
