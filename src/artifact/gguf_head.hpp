#pragma once
// Reads a joint schema head stored inside a GGUF (layouts B, C and D; layout.hpp) into the one
// internal representation, clef::head::HeadWeights (f32, torch names, packed in_proj). Any ggml
// type is dequantized with ggml's type traits; every name and shape is checked.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "artifact/layout.hpp"
#include "gguf/gguf_file.hpp"
#include "head/head_weights.hpp"

namespace clef::artifact {

/// A head read from a GGUF, plus what differs from the reference artifact (one line each).
struct GgufHead {
  head::HeadWeights weights;
  std::vector<std::string> differences;
};

/// The values of `t` (data in `file`, the whole GGUF's bytes) widened to f32, in ggml order
/// (row-major torch order). Throws clef::Error (model_error) for a type with no to_float.
std::vector<float> tensor_to_f32(const gguf::TensorRef& t, std::span<const std::byte> file);

/// Layout B. Config: hidden_size = clef.embedding_length, routing_layers =
/// clef.decision.routing_block_count, layers = clef.decision.block_count, heads =
/// clef.decision.head_count, width = decision.proj_memory.weight ne[1], feedforward =
/// dec.blk.0.ffn_up.weight ne[1] (llama.cpp src/models/clef.cpp load_arch_tensors). q/k/v are
/// concatenated back into in_proj; `decision.scales` becomes FoldedScales, used as is.
/// Throws model_error for a missing key or tensor, an unexpected tensor in the head namespace
/// (dec., decision., token_types.), a wrong shape, a LayerNorm eps other than 1e-5, or
/// decision.scales values that cannot be folded multipliers (prior or joint not in (0, 100],
/// gate not in [0, 1]).
GgufHead read_llama_cpp_head(const gguf::GgufFile& gguf, std::span<const std::byte> file);

/// Layouts C (keys qwen35.decision.<name>) and D (keys clef.<name>): the six config values are
/// integer keys; tensors `clef.<torch name>` of any type, raw scalars ([1]). Throws model_error
/// like read_llama_cpp_head.
GgufHead read_torch_named_head(const gguf::GgufFile& gguf, std::span<const std::byte> file,
                               Layout layout);

}  // namespace clef::artifact
