#include "record/llama_vocab.hpp"

#include <cstring>

#include "util/error.hpp"

namespace clef::record {

llama_model_kv_override qwen2_pretokenizer_override() {
  llama_model_kv_override o{};
  o.tag = LLAMA_KV_OVERRIDE_TYPE_STR;
  std::strncpy(o.key, "tokenizer.ggml.pre", sizeof(o.key) - 1);
  std::strncpy(o.val_str, "qwen2", sizeof(o.val_str) - 1);
  return o;
}

std::vector<llama_model_kv_override> pretokenizer_overrides(PreTokenizer pre) {
  std::vector<llama_model_kv_override> list;
  if (pre == PreTokenizer::qwen2) list.push_back(qwen2_pretokenizer_override());
  list.push_back(llama_model_kv_override{});  // key[0] == 0 ends the list
  return list;
}

VocabModel VocabModel::load(const std::string& path, PreTokenizer pre) {
  const std::vector<llama_model_kv_override> overrides = pretokenizer_overrides(pre);
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  params.kv_overrides = overrides.data();
  llama_model* model = llama_model_load_from_file(path.c_str(), params);
  if (model == nullptr) throw model_error("cannot load the vocabulary of " + path);
  return VocabModel(model);
}

}  // namespace clef::record
