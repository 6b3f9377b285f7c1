#include "testmodel/mmproj_writer.hpp"

#include <cmath>
#include <memory>
#include <vector>

#include "testmodel/gguf_stream_writer.hpp"

namespace clef::testmodel {

namespace {

Init proj(std::int64_t fan_in) {
  return Init::normal(0.0, 1.0 / std::sqrt(static_cast<double>(fan_in)));
}

}  // namespace

void write_mmproj(const std::filesystem::path& path, const VisionShape& s,
                  std::uint32_t text_n_embd, const std::string& description, std::uint64_t seed) {
  GgufStreamWriter w("mmproj");
  gguf_context* kv = w.kv();
  gguf_set_val_str(kv, "general.architecture", "clip");
  gguf_set_val_str(kv, "general.type", "mmproj");
  gguf_set_val_str(kv, "general.name", "clef test mmproj");
  gguf_set_val_str(kv, "general.description", description.c_str());
  gguf_set_val_u32(kv, "general.file_type", s.matrix_type == GGML_TYPE_F32 ? 0u : 1u);
  gguf_set_val_str(kv, "clip.projector_type", "qwen3vl_merger");
  gguf_set_val_bool(kv, "clip.has_vision_encoder", true);
  gguf_set_val_bool(kv, "clip.use_gelu", true);
  gguf_set_val_u32(kv, "clip.vision.image_size", s.n_pos_side * s.patch_size);
  gguf_set_val_u32(kv, "clip.vision.patch_size", s.patch_size);
  gguf_set_val_u32(kv, "clip.vision.embedding_length", s.n_embd);
  gguf_set_val_u32(kv, "clip.vision.feed_forward_length", s.n_ff);
  gguf_set_val_u32(kv, "clip.vision.block_count", s.n_layer);
  gguf_set_val_u32(kv, "clip.vision.attention.head_count", s.n_head);
  gguf_set_val_u32(kv, "clip.vision.projection_dim", text_n_embd);
  gguf_set_val_u32(kv, "clip.vision.spatial_merge_size", s.spatial_merge);
  gguf_set_val_f32(kv, "clip.vision.attention.layer_norm_epsilon", 1e-6f);
  const float half[3] = {0.5f, 0.5f, 0.5f};
  gguf_set_arr_data(kv, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, half, 3);
  gguf_set_arr_data(kv, "clip.vision.image_std", GGUF_TYPE_FLOAT32, half, 3);
  // std::vector<bool> has no contiguous storage: GGUF bools are one byte each.
  const std::vector<std::int8_t> deepstack(s.n_layer, 0);
  gguf_set_arr_data(kv, "clip.vision.is_deepstack_layers", GGUF_TYPE_BOOL, deepstack.data(),
                    deepstack.size());

  const std::int64_t C = s.n_embd;
  const std::int64_t P = s.patch_size;
  const std::int64_t merged = C * s.spatial_merge * s.spatial_merge;
  const ggml_type M = s.matrix_type;
  const ggml_type F = GGML_TYPE_F32;
  const Init ln_w = Init::normal(1.0, 0.1);
  const Init bias = Init::normal(0.0, 0.02);

  // Conv3d patch embedding (temporal patch 2) split into two Conv2d kernels [P, P, 3, C].
  const Init patch = proj(2 * 3 * P * P);
  w.add_tensor({"v.patch_embd.weight", {P, P, 3, C}, F, patch});
  w.add_tensor({"v.patch_embd.weight.1", {P, P, 3, C}, F, patch});
  w.add_tensor({"v.patch_embd.bias", {C}, F, bias});
  w.add_tensor({"v.position_embd.weight",
                {C, std::int64_t{s.n_pos_side} * s.n_pos_side},
                F,
                Init::normal(0.0, 0.5)});
  for (std::uint32_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "v.blk." + std::to_string(il) + ".";
    w.add_tensor({p + "ln1.weight", {C}, F, ln_w});
    w.add_tensor({p + "ln1.bias", {C}, F, bias});
    w.add_tensor({p + "attn_qkv.weight", {C, 3 * C}, M, proj(C)});
    w.add_tensor({p + "attn_qkv.bias", {3 * C}, F, bias});
    w.add_tensor({p + "attn_out.weight", {C, C}, M, proj(C)});
    w.add_tensor({p + "attn_out.bias", {C}, F, bias});
    w.add_tensor({p + "ln2.weight", {C}, F, ln_w});
    w.add_tensor({p + "ln2.bias", {C}, F, bias});
    w.add_tensor({p + "ffn_up.weight", {C, s.n_ff}, M, proj(C)});
    w.add_tensor({p + "ffn_up.bias", {s.n_ff}, F, bias});
    w.add_tensor({p + "ffn_down.weight", {s.n_ff, C}, M, proj(s.n_ff)});
    w.add_tensor({p + "ffn_down.bias", {C}, F, bias});
  }
  // Merger: LayerNorm over C, then 2x2 patches concatenated -> fc1 (GELU) -> fc2 to the text dim.
  w.add_tensor({"v.post_ln.weight", {C}, F, ln_w});
  w.add_tensor({"v.post_ln.bias", {C}, F, bias});
  w.add_tensor({"mm.0.weight", {merged, merged}, M, proj(merged)});
  w.add_tensor({"mm.0.bias", {merged}, F, bias});
  w.add_tensor({"mm.2.weight", {merged, text_n_embd}, M, proj(merged)});
  w.add_tensor({"mm.2.bias", {text_n_embd}, F, bias});
  w.write(path, seed);
}

}  // namespace clef::testmodel
