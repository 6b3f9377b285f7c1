#include "testmodel/presets.hpp"

#include "util/error.hpp"

namespace clef::testmodel {

namespace {

Preset tiny() {
  Preset p;
  p.name = "tiny";
  // 8 layers: GDN GDN GDN ATTN GDN GDN GDN ATTN. head_dim 64 -> n_rot 16, sections 3+3+2 = 8.
  p.backbone = {.n_embd = 64,
                .n_layer = 8,
                .full_attention_interval = 4,
                .n_head = 2,
                .n_head_kv = 1,
                .head_dim = 64,
                .n_rot = 16,
                .rope_sections = {3, 3, 2, 0},
                .rope_freq_base = 10000000.0f,
                .rms_eps = 1e-6f,
                .n_ff = 128,
                .ssm_conv_kernel = 4,
                .ssm_state_size = 16,
                .ssm_group_count = 2,
                .ssm_time_step_rank = 4,
                .context_length = 32768,
                .vocab_type = GGML_TYPE_F16,
                .matrix_type = GGML_TYPE_F32};
  p.vision = {.n_embd = 32,
              .n_layer = 2,
              .n_head = 2,
              .n_ff = 64,
              .patch_size = 16,
              .spatial_merge = 2,
              .n_pos_side = 16,
              .matrix_type = GGML_TYPE_F32};
  p.head = {.hidden_size = 64,
            .width = 32,
            .routing_layers = 1,
            .layers = 1,
            .heads = 4,
            .feedforward = 64};
  return p;
}

Preset small() {
  Preset p;
  p.name = "small";
  p.backbone = {.n_embd = 256,
                .n_layer = 8,
                .full_attention_interval = 4,
                .n_head = 4,
                .n_head_kv = 2,
                .head_dim = 64,
                .n_rot = 16,
                .rope_sections = {3, 3, 2, 0},
                .rope_freq_base = 10000000.0f,
                .rms_eps = 1e-6f,
                .n_ff = 512,
                .ssm_conv_kernel = 4,
                .ssm_state_size = 32,
                .ssm_group_count = 2,
                .ssm_time_step_rank = 4,
                .context_length = 32768,
                .vocab_type = GGML_TYPE_F16,
                .matrix_type = GGML_TYPE_F16};
  p.vision = {.n_embd = 128,
              .n_layer = 4,
              .n_head = 4,
              .n_ff = 256,
              .patch_size = 16,
              .spatial_merge = 2,
              .n_pos_side = 32,
              .matrix_type = GGML_TYPE_F16};
  p.head = {.hidden_size = 256,
            .width = 128,
            .routing_layers = 2,
            .layers = 4,
            .heads = 8,
            .feedforward = 512};
  return p;
}

Preset shape_08b() {
  Preset p;
  p.name = "shape-0.8b";
  // Qwen/Qwen3.5-0.8B text dimensions (see presets.hpp for the source).
  p.backbone = {.n_embd = 1024,
                .n_layer = 24,
                .full_attention_interval = 4,
                .n_head = 8,
                .n_head_kv = 2,
                .head_dim = 256,
                .n_rot = 64,
                .rope_sections = {11, 11, 10, 0},
                .rope_freq_base = 10000000.0f,
                .rms_eps = 1e-6f,
                .n_ff = 3584,
                .ssm_conv_kernel = 4,
                .ssm_state_size = 128,
                .ssm_group_count = 16,
                .ssm_time_step_rank = 16,
                .context_length = 262144,
                .vocab_type = GGML_TYPE_F16,
                .matrix_type = GGML_TYPE_F16};
  p.vision = {.n_embd = 768,
              .n_layer = 12,
              .n_head = 12,
              .n_ff = 3072,
              .patch_size = 16,
              .spatial_merge = 2,
              .n_pos_side = 48,
              .matrix_type = GGML_TYPE_F16};
  // Not the real head (clef-flash's is 4096/1024/2/4/16/4096 on a 9B): same ratios at H = 1024.
  p.head = {.hidden_size = 1024,
            .width = 256,
            .routing_layers = 2,
            .layers = 4,
            .heads = 16,
            .feedforward = 1024};
  return p;
}

Preset shape_9b() {
  Preset p;
  p.name = "shape-9b";
  p.backbone = {.n_embd = 4096,
                .n_layer = 32,
                .full_attention_interval = 4,
                .n_head = 16,
                .n_head_kv = 4,
                .head_dim = 256,
                .n_rot = 64,
                .rope_sections = {11, 11, 10, 0},
                .rope_freq_base = 10000000.0f,
                .rms_eps = 1e-6f,
                .n_ff = 12288,
                .ssm_conv_kernel = 4,
                .ssm_state_size = 128,
                .ssm_group_count = 16,
                .ssm_time_step_rank = 32,
                .context_length = 262144,
                .vocab_type = GGML_TYPE_Q4_K,
                .matrix_type = GGML_TYPE_Q4_K,
                .n_vocab = 248320,
                .pooled_quant_blocks = true};
  p.vision = {.n_embd = 1152,
              .n_layer = 27,
              .n_head = 16,
              .n_ff = 4304,
              .patch_size = 16,
              .spatial_merge = 2,
              .n_pos_side = 48,
              .matrix_type = GGML_TYPE_F16};
  p.head = {.hidden_size = 4096,
            .width = 1024,
            .routing_layers = 2,
            .layers = 4,
            .heads = 16,
            .feedforward = 4096};
  return p;
}

/// `small` with Clef 27B's ratios (presets.hpp): what the CI runs of the 27B's geometry.
Preset small_27b() {
  Preset p = small();
  p.name = "small-27b";
  p.backbone.n_embd = 320;  // 5,120 / 16
  p.backbone.n_head = 6;    // 24 query heads on 4 KV heads: 6 on 1
  p.backbone.n_head_kv = 1;
  p.backbone.n_ff = 1088;             // 17,408 / 16
  p.backbone.ssm_group_count = 2;     // GDN key heads
  p.backbone.ssm_time_step_rank = 6;  // value heads: 3x the key heads, as 48 on 16
  p.head.hidden_size = 320;
  return p;
}

Preset shape_27b() {
  Preset p = shape_9b();
  p.name = "shape-27b";
  p.backbone.n_embd = 5120;
  p.backbone.n_layer = 64;  // 48 Gated DeltaNet + 16 full attention
  p.backbone.n_head = 24;
  p.backbone.n_head_kv = 4;
  p.backbone.n_ff = 17408;
  p.backbone.ssm_group_count = 16;
  p.backbone.ssm_time_step_rank = 48;
  p.head.hidden_size = 5120;  // Clef 27B's joint_head_config.json: clef-flash's at H = 5,120
  return p;
}

}  // namespace

std::vector<std::string> preset_names() {
  return {"tiny", "small", "small-27b", "shape-0.8b", "shape-9b", "shape-27b"};
}

Preset preset_by_name(std::string_view name) {
  if (name == "tiny") return tiny();
  if (name == "small") return small();
  if (name == "shape-0.8b") return shape_08b();
  if (name == "shape-9b") return shape_9b();
  if (name == "small-27b") return small_27b();
  if (name == "shape-27b") return shape_27b();
  throw invalid_request("unknown preset '" + std::string(name) +
                            "': expected tiny, small, small-27b, shape-0.8b, shape-9b or shape-27b",
                        "preset");
}

}  // namespace clef::testmodel
