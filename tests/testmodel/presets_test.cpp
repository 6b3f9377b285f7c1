// Preset shapes satisfy the constraints of llama.cpp's qwen35 / qwen3vl loaders and of clef.
#include "testmodel/presets.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace clef::testmodel {
namespace {

class PresetShape : public ::testing::TestWithParam<std::string> {};

TEST_P(PresetShape, SatisfiesLoaderConstraints) {
  const Preset p = preset_by_name(GetParam());
  const BackboneShape& b = p.backbone;
  EXPECT_EQ(p.name, GetParam());
  // qwen35.cpp: sections required, sum == n_rot / 2; n_rot within the head.
  EXPECT_EQ(2 * (b.rope_sections[0] + b.rope_sections[1] + b.rope_sections[2] + b.rope_sections[3]),
            static_cast<std::int32_t>(b.n_rot));
  EXPECT_LE(b.n_rot, b.head_dim);
  EXPECT_EQ(b.n_rot * 4, b.head_dim);  // partial_rotary_factor 0.25 as in Qwen3.5
  // delta-net-base.cpp: value heads a multiple of key heads; GQA heads a multiple of KV heads.
  EXPECT_EQ(b.ssm_time_step_rank % b.ssm_group_count, 0u);
  EXPECT_EQ(b.n_head % b.n_head_kv, 0u);
  // Hybrid pattern with at least one layer of each kind.
  EXPECT_EQ(b.full_attention_interval, 4u);
  EXPECT_EQ(b.n_layer % b.full_attention_interval, 0u);
  // qwen3vl.cpp: the vision head dim splits into 4 M-RoPE sections; merger is 2x2.
  const VisionShape& v = p.vision;
  EXPECT_EQ(v.n_embd % v.n_head, 0u);
  EXPECT_EQ((v.n_embd / v.n_head) % 4, 0u);
  EXPECT_EQ(v.patch_size, 16u);
  EXPECT_EQ(v.spatial_merge, 2u);
  // Decision contract section 5: the head reads the backbone's hidden states.
  EXPECT_EQ(p.head.hidden_size, b.n_embd);
  EXPECT_EQ(p.head.width % p.head.heads, 0u);
}

INSTANTIATE_TEST_SUITE_P(All, PresetShape, ::testing::ValuesIn(preset_names()));

TEST(Presets, Shape08bHasQwen35_08bDimensionsAndIsQuantizable) {
  const Preset p = preset_by_name("shape-0.8b");
  const BackboneShape& b = p.backbone;
  EXPECT_EQ(b.n_embd, 1024u);
  EXPECT_EQ(b.n_layer, 24u);
  EXPECT_EQ(b.n_head, 8u);
  EXPECT_EQ(b.n_head_kv, 2u);
  EXPECT_EQ(b.head_dim, 256u);
  EXPECT_EQ(b.n_ff, 3584u);
  EXPECT_EQ(b.ssm_group_count, 16u);
  EXPECT_EQ(b.ssm_time_step_rank, 16u);
  EXPECT_EQ(b.ssm_state_size, 128u);
  EXPECT_EQ(p.vision.n_embd, 768u);
  EXPECT_EQ(p.vision.n_layer, 12u);
  // K-quants need row lengths that are multiples of 256.
  for (std::uint32_t row :
       {b.n_embd, b.n_ff, b.head_dim * b.n_head, b.ssm_state_size * b.ssm_time_step_rank}) {
    EXPECT_EQ(row % 256, 0u) << row;
  }
}

TEST(Presets, Shape9bHasThePublishedBackbonesShapeInQ4K) {
  const Preset p = preset_by_name("shape-9b");
  const BackboneShape& b = p.backbone;
  EXPECT_EQ(b.n_embd, 4096u);
  EXPECT_EQ(b.n_layer, 32u);  // 24 Gated DeltaNet + 8 full attention
  EXPECT_EQ(b.n_layer / b.full_attention_interval, 8u);
  EXPECT_EQ(b.n_ff, 12288u);
  EXPECT_EQ(b.n_vocab, 248320u);
  EXPECT_EQ(b.matrix_type, GGML_TYPE_Q4_K);
  EXPECT_TRUE(b.pooled_quant_blocks);
  // The real head config (clef-flash's joint_head_config.json).
  EXPECT_EQ(p.head.hidden_size, 4096);
  EXPECT_EQ(p.head.width, 1024);
  EXPECT_EQ(p.head.routing_layers, 2);
  EXPECT_EQ(p.head.layers, 4);
  EXPECT_EQ(p.head.heads, 16);
  EXPECT_EQ(p.head.feedforward, 4096);
  for (std::uint32_t row :
       {b.n_embd, b.n_ff, b.head_dim * b.n_head, b.ssm_state_size * b.ssm_time_step_rank}) {
    EXPECT_EQ(row % 256, 0u) << row;
  }
}

TEST(Presets, Shape27bHasClef27BsBackboneShapeAndHeadConfig) {
  const Preset p = preset_by_name("shape-27b");
  const BackboneShape& b = p.backbone;
  EXPECT_EQ(b.n_embd, 5120u);
  EXPECT_EQ(b.n_layer, 64u);
  EXPECT_EQ(b.n_layer / b.full_attention_interval, 16u);
  EXPECT_EQ(b.n_head, 24u);
  EXPECT_EQ(b.n_head_kv, 4u);
  EXPECT_EQ(b.head_dim, 256u);
  EXPECT_EQ(b.n_ff, 17408u);
  EXPECT_EQ(b.ssm_group_count, 16u);
  EXPECT_EQ(b.ssm_time_step_rank, 48u);
  EXPECT_EQ(b.ssm_state_size, 128u);
  EXPECT_EQ(b.n_vocab, 248320u);
  EXPECT_EQ(b.matrix_type, GGML_TYPE_Q4_K);
  EXPECT_EQ(p.head.hidden_size, 5120);
  EXPECT_EQ(p.head.width, 1024);
  EXPECT_EQ(p.head.feedforward, 4096);
  for (std::uint32_t row :
       {b.n_embd, b.n_ff, b.head_dim * b.n_head, b.ssm_state_size * b.ssm_time_step_rank}) {
    EXPECT_EQ(row % 256, 0u) << row;
  }
}

TEST(Presets, Small27bKeepsThe27BsRatios) {
  const BackboneShape big = preset_by_name("shape-27b").backbone;
  const Preset p = preset_by_name("small-27b");
  const BackboneShape& b = p.backbone;
  EXPECT_EQ(b.ssm_time_step_rank, 3 * b.ssm_group_count) << "value heads 3x the key heads";
  EXPECT_EQ(big.ssm_time_step_rank, 3 * big.ssm_group_count);
  EXPECT_EQ(b.n_head / b.n_head_kv, big.n_head / big.n_head_kv);
  EXPECT_EQ(big.n_embd / b.n_embd, 16u);
  EXPECT_EQ(big.n_ff / b.n_ff, 16u);
  EXPECT_EQ(p.head.hidden_size, 320);
}

TEST(Presets, UnknownNameIsAnInvalidRequest) {
  try {
    preset_by_name("huge");
    FAIL() << "no error";
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_request);
    EXPECT_EQ(e.param(), "preset");
    EXPECT_NE(std::string(e.what()).find("huge"), std::string::npos);
  }
}

}  // namespace
}  // namespace clef::testmodel
