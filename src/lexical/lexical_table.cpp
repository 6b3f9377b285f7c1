#include "lexical/lexical_table.hpp"

#include <ggml.h>

#include "gguf/gguf_file.hpp"
#include "util/error.hpp"

namespace clef::lexical {

LexicalTable::LexicalTable(const std::string& gguf_path) : file_(gguf_path) {
  // Only output.weight's bytes are read: its range is checked below, not every tensor's.
  const gguf::GgufFile g(gguf_path, /*header_only=*/true);
  const auto t = g.tensor("output.weight");
  if (!t) {
    throw model_error("'" + gguf_path +
                      "' has no output.weight: the LM head is tied to the token embeddings, but "
                      "clef-flash's lexical prior needs the untied LM head");
  }
  const ggml_type type = t->type;
  const auto* traits = ggml_get_type_traits(type);
  if (type != GGML_TYPE_F32 && (traits == nullptr || traits->to_float == nullptr)) {
    throw model_error(std::string("output.weight has type ") + ggml_type_name(type) +
                      ", which cannot be dequantized row by row");
  }
  if (t->ne[1] < 1 || t->ne[2] != 1 || t->ne[3] != 1) {
    throw model_error("output.weight in '" + gguf_path + "' is not a 2-D tensor");
  }
  n_embd_ = static_cast<int>(t->ne[0]);
  n_vocab_ = static_cast<int>(t->ne[1]);
  type_ = static_cast<int>(type);
  type_name_ = ggml_type_name(type);
  if (n_embd_ % ggml_blck_size(type) != 0) {
    throw model_error("output.weight row length " + std::to_string(n_embd_) +
                      " is not a multiple of the block size of " + type_name_);
  }
  row_bytes_ = ggml_row_size(type, n_embd_);
  data_offset_ = t->offset;
  if (t->bytes != row_bytes_ * static_cast<std::size_t>(n_vocab_) ||
      data_offset_ + row_bytes_ * static_cast<std::uint64_t>(n_vocab_) > file_.size()) {
    throw model_error("output.weight in '" + gguf_path + "' is truncated or inconsistent");
  }
}

void LexicalTable::row(std::int32_t id, std::span<float> out) const {
  if (id < 0 || id >= n_vocab_) {
    throw invalid_request("token id " + std::to_string(id) + " is outside the vocabulary (" +
                          std::to_string(n_vocab_) + " rows)");
  }
  if (out.size() != static_cast<std::size_t>(n_embd_)) {
    throw std::invalid_argument("LexicalTable::row: output span has the wrong size");
  }
  const auto type = static_cast<ggml_type>(type_);
  const std::uint64_t offset = data_offset_ + row_bytes_ * static_cast<std::uint64_t>(id);
  if (type == GGML_TYPE_F32) {
    file_.read_at(offset, std::as_writable_bytes(out));
    return;
  }
  std::vector<std::byte> raw(row_bytes_);
  file_.read_at(offset, raw);
  ggml_get_type_traits(type)->to_float(raw.data(), out.data(), n_embd_);
}

std::vector<float> LexicalTable::mean_row(std::span<const std::int32_t> ids) const {
  if (ids.empty()) throw invalid_request("a lexical prior needs a non-empty option span");
  std::vector<float> sum(n_embd_, 0.0f);
  std::vector<float> r(n_embd_);
  for (std::int32_t id : ids) {
    row(id, r);
    for (int k = 0; k < n_embd_; ++k) sum[k] += r[k];
  }
  const float count = static_cast<float>(ids.size());
  for (float& v : sum) v /= count;
  return sum;
}

}  // namespace clef::lexical
