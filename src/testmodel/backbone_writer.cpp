#include "testmodel/backbone_writer.hpp"

#include <cmath>

#include "gguf/copy_keys.hpp"
#include "gguf/gguf_file.hpp"
#include "testmodel/gguf_stream_writer.hpp"
#include "testmodel/vocab_specials.hpp"
#include "util/error.hpp"

namespace clef::testmodel {

namespace {

/// Scale of the residual-branch output projections (attn_output, ssm_out, ffn_down): keeps the
/// residual stream from growing with depth.
constexpr double kOutGain = 0.5;

Init proj(std::int64_t fan_in, double gain = 1.0) {
  return Init::normal(0.0, gain / std::sqrt(static_cast<double>(fan_in)));
}
Init norm_weight() {
  return Init::normal(1.0, 0.1);
}

void set_u32(gguf_context* kv, const std::string& key, std::uint32_t v) {
  gguf_set_val_u32(kv, key.c_str(), v);
}

}  // namespace

std::uint32_t write_backbone(const std::filesystem::path& path, const BackboneShape& s,
                             const std::string& description, std::uint64_t seed,
                             const std::filesystem::path& vocab_gguf) {
  const gguf::GgufFile vocab(vocab_gguf);
  if (!vocab.has("tokenizer.ggml.tokens")) {
    throw model_error(vocab_gguf.string() + " has no tokenizer.ggml.tokens");
  }
  GgufStreamWriter w("backbone");
  gguf_context* kv = w.kv();
  const std::string a = "qwen35.";
  gguf_set_val_str(kv, "general.architecture", "qwen35");
  gguf_set_val_str(kv, "general.type", "model");
  gguf_set_val_str(kv, "general.name", "clef test backbone");
  gguf_set_val_str(kv, "general.description", description.c_str());
  const bool all_f32 = s.matrix_type == GGML_TYPE_F32 && s.vocab_type == GGML_TYPE_F32;
  const bool q4_k = s.matrix_type == GGML_TYPE_Q4_K;
  // LLAMA_FTYPE_ALL_F32 / MOSTLY_F16 / MOSTLY_Q4_K_M
  gguf_set_val_u32(kv, "general.file_type", all_f32 ? 0u : q4_k ? 15u : 1u);
  set_u32(kv, a + "context_length", s.context_length);
  set_u32(kv, a + "embedding_length", s.n_embd);
  set_u32(kv, a + "block_count", s.n_layer);
  set_u32(kv, a + "feed_forward_length", s.n_ff);
  set_u32(kv, a + "attention.head_count", s.n_head);
  set_u32(kv, a + "attention.head_count_kv", s.n_head_kv);
  set_u32(kv, a + "attention.key_length", s.head_dim);
  set_u32(kv, a + "attention.value_length", s.head_dim);
  gguf_set_val_f32(kv, (a + "attention.layer_norm_rms_epsilon").c_str(), s.rms_eps);
  set_u32(kv, a + "rope.dimension_count", s.n_rot);
  gguf_set_arr_data(kv, (a + "rope.dimension_sections").c_str(), GGUF_TYPE_INT32, s.rope_sections,
                    4);
  gguf_set_val_f32(kv, (a + "rope.freq_base").c_str(), s.rope_freq_base);
  set_u32(kv, a + "ssm.conv_kernel", s.ssm_conv_kernel);
  set_u32(kv, a + "ssm.state_size", s.ssm_state_size);
  set_u32(kv, a + "ssm.group_count", s.ssm_group_count);
  set_u32(kv, a + "ssm.time_step_rank", s.ssm_time_step_rank);
  set_u32(kv, a + "ssm.inner_size", s.ssm_state_size * s.ssm_time_step_rank);
  set_u32(kv, a + "full_attention_interval", s.full_attention_interval);
  gguf::copy_keys_with_prefix(kv, vocab.raw(), "tokenizer.");
  // The test vocabulary is Qwen2's: give it the record's vision and thinking tokens so a record
  // has the real structure (the engine looks them up by text).
  std::int64_t n_vocab = append_control_tokens(kv, record_special_tokens());
  if (s.n_vocab > n_vocab) n_vocab = pad_vocabulary(kv, s.n_vocab);
  w.set_pooled_quant_blocks(s.pooled_quant_blocks);

  const std::int64_t E = s.n_embd;
  const std::int64_t hd = s.head_dim;
  const std::int64_t key_dim = std::int64_t{s.ssm_state_size} * s.ssm_group_count;
  const std::int64_t value_dim = std::int64_t{s.ssm_state_size} * s.ssm_time_step_rank;
  const std::int64_t conv_dim = 2 * key_dim + value_dim;
  const std::int64_t n_v = s.ssm_time_step_rank;
  const ggml_type M = s.matrix_type;
  const ggml_type F = GGML_TYPE_F32;

  w.add_tensor({"token_embd.weight", {E, n_vocab}, s.vocab_type, Init::normal(0.0, 1.0)});
  w.add_tensor({"output_norm.weight", {E}, F, norm_weight()});
  w.add_tensor({"output.weight", {E, n_vocab}, s.vocab_type, proj(E)});
  for (std::uint32_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const bool recurrent = (il + 1) % s.full_attention_interval != 0;
    w.add_tensor({p + "attn_norm.weight", {E}, F, norm_weight()});
    w.add_tensor({p + "post_attention_norm.weight", {E}, F, norm_weight()});
    if (recurrent) {
      w.add_tensor({p + "attn_qkv.weight", {E, conv_dim}, M, proj(E)});
      w.add_tensor({p + "attn_gate.weight", {E, value_dim}, M, proj(E)});
      w.add_tensor(
          {p + "ssm_conv1d.weight", {s.ssm_conv_kernel, conv_dim}, F, Init::normal(0.0, 0.5)});
      // dt in [0.001, 0.1) and A in [1, 16): the ranges of the Mamba / Qwen3-Next initialisation.
      w.add_tensor({p + "ssm_dt.bias", {n_v}, F, Init::dt_bias(std::log(0.001), std::log(0.1))});
      w.add_tensor({p + "ssm_a", {n_v}, F, Init::neg_exp_uniform(0.0, std::log(16.0))});
      w.add_tensor({p + "ssm_beta.weight", {E, n_v}, M, proj(E)});
      w.add_tensor({p + "ssm_alpha.weight", {E, n_v}, M, proj(E)});
      w.add_tensor({p + "ssm_norm.weight", {s.ssm_state_size}, F, norm_weight()});
      w.add_tensor({p + "ssm_out.weight", {value_dim, E}, M, proj(value_dim, kOutGain)});
    } else {
      // attn_q holds query and output gate interleaved per head (qwen35.cpp build_layer_attn).
      w.add_tensor({p + "attn_q.weight", {E, 2 * hd * s.n_head}, M, proj(E)});
      w.add_tensor({p + "attn_k.weight", {E, hd * s.n_head_kv}, M, proj(E)});
      w.add_tensor({p + "attn_v.weight", {E, hd * s.n_head_kv}, M, proj(E)});
      w.add_tensor(
          {p + "attn_output.weight", {hd * s.n_head, E}, M, proj(hd * s.n_head, kOutGain)});
      w.add_tensor({p + "attn_q_norm.weight", {hd}, F, norm_weight()});
      w.add_tensor({p + "attn_k_norm.weight", {hd}, F, norm_weight()});
    }
    w.add_tensor({p + "ffn_gate.weight", {E, s.n_ff}, M, proj(E)});
    w.add_tensor({p + "ffn_up.weight", {E, s.n_ff}, M, proj(E)});
    w.add_tensor({p + "ffn_down.weight", {s.n_ff, E}, M, proj(s.n_ff, kOutGain)});
  }
  w.write(path, seed);
  return static_cast<std::uint32_t>(n_vocab);
}

}  // namespace clef::testmodel
