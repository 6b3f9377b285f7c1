#pragma once
// Converts a layout A model (qwen35 backbone GGUF + joint_head.safetensors + config) into one GGUF
// in layout B or C, the way the publishers' converters do it, so that every layout can be tested
// with the same weights (`clef make-test-model --layout B|C`):
//  - B, as llama.cpp conversion/clef.py: keys qwen35.* renamed clef.*, general.architecture clef,
//    clef.decision.{type,routing_block_count,block_count,head_count} and
//    clef.attention.layer_norm_epsilon = 1e-5; head tensors named by llama_cpp_head_names (q/k/v
//    split), 2-D head matrices in `head_matrix_type` (BF16, F16, F32 or Q8_0), the scorer's output
//    weight 1-D BF16, every vector F32, and decision.scales = fold_scales() of the raw scalars;
//  - C, as Ollama llama/clef/convert.py: keys kept, plus qwen35.decision.type = "clef" and
//    qwen35.decision.<config key> (u32); every head tensor `clef.<torch name>` in F32, scalars
//    raw [1].
// Backbone tensors are copied byte for byte, streamed, so multi-GB backbones are fine.

#include <filesystem>

#include "artifact/layout.hpp"
#include "artifact/open_model.hpp"
#include "ggml.h"

namespace clef::artifact {

/// Writes `out` (through `out` + ".tmp", renamed at the end) from the layout A model `source`.
/// Throws clef::Error (model_error) when `source` is not a usable layout A model or
/// a head row length is not a multiple of `head_matrix_type`'s block, invalid_request for a
/// target other than B or C or a `head_matrix_type` other than F32, F16, BF16, Q8_0, Q4_0, Q5_0,
/// Q6_K, std::runtime_error on I/O failure.
void write_layout(const ModelPaths& source, Layout target, const std::filesystem::path& out,
                  ggml_type head_matrix_type = GGML_TYPE_BF16);

}  // namespace clef::artifact
