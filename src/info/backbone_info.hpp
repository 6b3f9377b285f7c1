#pragma once
// What a backbone GGUF is, and whether clef can use it: a qwen35 (Qwen3.5) text model with an
// untied output.weight of shape [n_embd, n_vocab] (decision contract, sections 4 and 5).

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf/gguf_file.hpp"

namespace clef::info {

struct BackboneInfo {
  std::filesystem::path path;
  std::uintmax_t file_size = 0;
  std::string arch;
  std::string name;           ///< general.name, may be empty
  std::uint32_t n_layer = 0;  ///< trunk layers (block_count minus nextn/MTP layers)
  std::uint32_t n_layer_nextn = 0;
  std::optional<std::uint32_t> full_attention_interval;
  std::vector<bool> recurrent;  ///< per trunk layer: true = Gated DeltaNet, false = full attention
  std::uint32_t n_embd = 0;
  std::uint32_t n_vocab = 0;  ///< tokens in tokenizer.ggml.tokens
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t n_rot = 0;
  std::array<std::int32_t, 4> rope_sections{};
  double rope_freq_base = 0;
  std::uint32_t n_ff = 0;
  std::uint32_t ssm_state_size = 0, ssm_group_count = 0, ssm_time_step_rank = 0, ssm_inner_size = 0,
                ssm_conv_kernel = 0;
  std::string tokenizer_model;  ///< tokenizer.ggml.model
  std::string tokenizer_pre;    ///< tokenizer.ggml.pre
  ggml_type output_type = GGML_TYPE_F32;
  std::size_t n_tensors = 0;
  std::map<std::string, std::size_t> tensor_types;  ///< ggml type name -> tensor count
};

/// Reads and validates a backbone. Throws model_error when: the architecture is not qwen35, a
/// required key is missing, rope.dimension_sections is missing or does not sum to n_rot/2,
/// output.weight is missing (tied embeddings) or its shape is not [n_embd, n_vocab].
BackboneInfo read_backbone_info(const gguf::GgufFile& file);

}  // namespace clef::info
