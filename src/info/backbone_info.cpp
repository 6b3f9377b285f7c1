#include "info/backbone_info.hpp"

#include "util/error.hpp"

namespace clef::info {

BackboneInfo read_backbone_info(const gguf::GgufFile& f) {
  const std::string file = f.path().string();
  BackboneInfo b;
  b.path = f.path();
  b.file_size = f.file_size();
  b.arch = f.find_string("general.architecture").value_or("");
  if (b.arch == "clip") {
    throw model_error(file + " is an mmproj (vision projector), not a backbone");
  }
  // "clef" is llama.cpp's name for the same backbone with the head inside (keys clef.*).
  if (b.arch != "qwen35" && b.arch != "clef") {
    throw model_error(file + ": architecture '" + b.arch +
                      "' is not supported; clef needs a Qwen3.5 backbone (GGUF arch qwen35, or "
                      "clef with the head inside)");
  }
  b.name = f.find_string("general.name").value_or("");
  const std::string a = b.arch + ".";
  const auto u32 = [&](const std::string& key) {
    return static_cast<std::uint32_t>(f.require_int(a + key));
  };
  const std::uint32_t block_count = u32("block_count");
  b.n_layer_nextn = static_cast<std::uint32_t>(f.find_int(a + "nextn_predict_layers").value_or(0));
  if (b.n_layer_nextn >= block_count) {
    throw model_error(file + ": nextn_predict_layers >= block_count");
  }
  b.n_layer = block_count - b.n_layer_nextn;
  b.n_embd = u32("embedding_length");
  b.n_ctx_train = u32("context_length");
  b.n_head = u32("attention.head_count");
  b.n_head_kv =
      static_cast<std::uint32_t>(f.find_int(a + "attention.head_count_kv").value_or(b.n_head));
  b.head_dim = static_cast<std::uint32_t>(
      f.find_int(a + "attention.key_length").value_or(b.n_head ? b.n_embd / b.n_head : 0));
  b.n_rot = static_cast<std::uint32_t>(f.find_int(a + "rope.dimension_count").value_or(b.head_dim));
  b.rope_freq_base = f.find_number(a + "rope.freq_base").value_or(10000.0);
  b.n_ff = u32("feed_forward_length");
  b.ssm_conv_kernel = u32("ssm.conv_kernel");
  b.ssm_state_size = u32("ssm.state_size");
  b.ssm_group_count = u32("ssm.group_count");
  b.ssm_time_step_rank = u32("ssm.time_step_rank");
  b.ssm_inner_size = u32("ssm.inner_size");

  const std::vector<double> sections = f.numeric_array(a + "rope.dimension_sections");
  if (sections.size() < 3) {
    throw model_error(file + ": missing " + a +
                      "rope.dimension_sections (M-RoPE sections are required for qwen35)");
  }
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < 4 && i < sections.size(); ++i) {
    b.rope_sections[i] = static_cast<std::int32_t>(sections[i]);
    sum += b.rope_sections[i];
  }
  if (sum * 2 != b.n_rot) {
    throw model_error(file + ": rope.dimension_sections sum to " + std::to_string(sum) +
                      ", expected n_rot/2 = " + std::to_string(b.n_rot / 2));
  }

  // Layer pattern as llama.cpp derives it (qwen35.cpp load_arch_hparams).
  const std::vector<double> recr = f.numeric_array(a + "attention.recurrent_layers");
  if (!recr.empty()) {
    for (std::uint32_t i = 0; i < b.n_layer && i < recr.size(); ++i)
      b.recurrent.push_back(recr[i] != 0);
  } else {
    const auto interval =
        static_cast<std::uint32_t>(f.find_int(a + "full_attention_interval").value_or(4));
    if (interval == 0) throw model_error(file + ": full_attention_interval is 0");
    b.full_attention_interval = interval;
    for (std::uint32_t i = 0; i < b.n_layer; ++i) b.recurrent.push_back((i + 1) % interval != 0);
  }

  b.tokenizer_model = f.find_string("tokenizer.ggml.model").value_or("");
  b.tokenizer_pre = f.find_string("tokenizer.ggml.pre").value_or("");
  const auto n_tokens = f.find_array_size("tokenizer.ggml.tokens");
  if (!n_tokens) throw model_error(file + ": no tokenizer (tokenizer.ggml.tokens is missing)");
  b.n_vocab = static_cast<std::uint32_t>(*n_tokens);

  for (const gguf::TensorRef& t : f.tensors()) {
    ++b.tensor_types[ggml_type_name(t.type)];
    ++b.n_tensors;
  }
  const auto output = f.tensor("output.weight");
  if (!output) {
    throw model_error(file +
                      ": no output.weight (tied embeddings); clef needs the untied LM head "
                      "output.weight for the lexical prior");
  }
  const std::array<std::int64_t, 4> want = {b.n_embd, b.n_vocab, 1, 1};
  if (output->ne != want) {
    throw model_error(file + ": output.weight has shape " + gguf::ne_string(output->ne) +
                      ", expected " + gguf::ne_string(want) + " = [n_embd, n_vocab]");
  }
  b.output_type = output->type;
  const auto embd = f.tensor("token_embd.weight");
  if (!embd || embd->ne != want) {
    throw model_error(file + ": token_embd.weight is missing or not [n_embd, n_vocab]");
  }
  return b;
}

}  // namespace clef::info
