#pragma once
// Shapes of the random-weight test models (`clef make-test-model --preset ...`).
//
// `shape-0.8b` copies the dimensions of Qwen/Qwen3.5-0.8B (config.json as quoted by public test
// code in the search index: ids 54905607740, 68759485231, 61026521556): text hidden 1024, 24 layers
// with full_attention_interval 4, 8 query / 2 KV heads of dim 256, partial_rotary_factor 0.25
// (n_rot 64), mrope_section [11, 11, 10], rope_theta 1e7, intermediate 3584, Gated DeltaNet 16 key
// heads / 16 value heads of dim 128, conv kernel 4; vision depth 12, hidden 768, intermediate
// 3072, 12 heads, patch 16, spatial merge 2, 2304 position embeddings, out_hidden_size 1024.
// Its vocabulary is the copied test tokenizer's (151936 + the 6 record special tokens it lacks,
// see vocab_specials.hpp), not the real 248320, and its head config
// is a guess (the real clef-flash head sits on a 9B backbone).
//
// `shape-9b` has the published clef-flash backbone's shape (Qwen3.5-9B text: hidden 4096, 32
// layers of which every 4th is full attention (8) and the rest Gated DeltaNet (24), 16 query / 4
// KV heads of dim 256, n_rot 64, mrope_section [11, 11, 10], intermediate 12288, GDN 16 key heads
// and 32 value heads of dim 128, conv kernel 4; vocabulary padded to 248,320; vision depth 27,
// hidden 1152, intermediate 4304, 16 heads) and the real head config (hidden 4096, width 1024,
// 2 routing layers, 4 layers, 16 heads, feed-forward 4096), its matrices written directly in
// Q4_K (the published file is Q4_K_M: mostly Q4_K, some Q6_K) from pooled random blocks.
//
// `shape-27b` has Clef 27B's backbone shape (Qwen3.8-27B text, the `qwen35` architecture: hidden
// 5120, 64 layers with full attention every 4th (16), 24 query / 4 KV heads of dim 256, n_rot
// 64, intermediate 17408, GDN 16 key heads and 48 value heads of dim 128, conv kernel 4; issue 44)
// and its head config (clef-flash's with hidden_size 5120), Q4_K like `shape-9b`, the same vision
// tower (its projector output 5120 wide).
//
// `small-27b` is `small` with the 27B's ratios, small enough for every CI run: hidden 320
// (5120 / 16), 6 query heads on 1 KV head (24 on 4), feed-forward 1088 (17408 / 16), GDN value
// heads 3x the key heads (6 on 2: 48 on 16), head hidden_size 320: its recurrent state and KV
// per token differ from clef-flash-shaped models' as the 27B's do. Its 320-wide rows are not
// multiples of 256: K-quants fall back as llama.cpp decides (F16 is its usual form).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ggml.h"
#include "head/head_config.hpp"

namespace clef::testmodel {

/// qwen35 text backbone hyperparameters (GGUF `qwen35.*` keys).
struct BackboneShape {
  std::uint32_t n_embd;
  std::uint32_t n_layer;
  std::uint32_t full_attention_interval;  ///< layer il is full attention iff (il+1) % interval == 0
  std::uint32_t n_head;
  std::uint32_t n_head_kv;
  std::uint32_t head_dim;         ///< attention key/value length
  std::uint32_t n_rot;            ///< rotated dims per head (head_dim * partial_rotary_factor)
  std::int32_t rope_sections[4];  ///< interleaved M-RoPE sections, sum == n_rot / 2
  float rope_freq_base;
  float rms_eps;
  std::uint32_t n_ff;
  std::uint32_t ssm_conv_kernel;
  std::uint32_t ssm_state_size;      ///< GDN head dim (key and value)
  std::uint32_t ssm_group_count;     ///< GDN key heads
  std::uint32_t ssm_time_step_rank;  ///< GDN value heads
  std::uint32_t context_length;
  ggml_type vocab_type;   ///< token_embd.weight and output.weight
  ggml_type matrix_type;  ///< every other 2-D projection (ssm_conv1d stays F32)
  /// Rows of the vocabulary: 0 the test tokenizer's (151,942 with the record's special tokens),
  /// more pads it with unused tokens (the real Qwen3.5 vocabulary has 248,320).
  std::uint32_t n_vocab = 0;
  /// Quantized matrices written from a pool of quantized blocks (GgufStreamWriter::
  /// set_pooled_quant_blocks): what makes a 9B-shaped quantized file in about a minute.
  bool pooled_quant_blocks = false;
};

/// qwen3vl vision tower + merger hyperparameters (GGUF `clip.vision.*` keys).
struct VisionShape {
  std::uint32_t n_embd;
  std::uint32_t n_layer;
  std::uint32_t n_head;
  std::uint32_t n_ff;
  std::uint32_t patch_size;
  std::uint32_t spatial_merge;
  std::uint32_t n_pos_side;  ///< learned position grid side; image_size = side * patch_size
  ggml_type matrix_type;
};

struct Preset {
  std::string name;
  BackboneShape backbone;
  VisionShape vision;
  head::HeadConfig head;  ///< joint_head_config.json; hidden_size == backbone.n_embd
};

/// Preset names accepted by preset_by_name, in order: "tiny", "small", "small-27b",
/// "shape-0.8b", "shape-9b", "shape-27b".
std::vector<std::string> preset_names();

/// The preset called `name`. Throws clef::Error (invalid_request, param "preset") when unknown.
Preset preset_by_name(std::string_view name);

}  // namespace clef::testmodel
