#pragma once
// Lexical prior rows (contract section 5, step 3): l_o = mean of the LM head's rows
// output.weight[ids[span_o]] (NOT normalized). Rows are read from the backbone GGUF on demand and
// dequantized to f32 from whatever type the file stores (ggml type traits), so the whole
// [n_vocab, n_embd] matrix never has to be held in f32.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/file_reader.hpp"

namespace clef::lexical {

/// Reads rows of `output.weight` ([n_vocab, n_embd] in the GGUF's ggml order ne = {n_embd,
/// n_vocab}) from a backbone GGUF. Thread-safe for concurrent reads (pread, no shared cursor).
class LexicalTable {
 public:
  /// Opens `gguf_path` and locates output.weight. Throws clef::Error (model_error) if the file is
  /// not a GGUF, has no output.weight (a tied LM head: clef needs the untied one), or the tensor's
  /// type cannot be dequantized row by row.
  explicit LexicalTable(const std::string& gguf_path);

  int n_embd() const noexcept { return n_embd_; }
  int n_vocab() const noexcept { return n_vocab_; }
  /// ggml type name of the stored tensor ("f32", "q8_0", "q6_K", ...).
  const std::string& type_name() const noexcept { return type_name_; }

  /// Row `id` dequantized to f32 into `out` (n_embd floats). Throws clef::Error
  /// (invalid_request) if id is outside [0, n_vocab).
  void row(std::int32_t id, std::span<float> out) const;

  /// Mean over `ids` of their rows, summed in f32 in order then divided by the count, as torch's
  /// mean over a span computes it in f32. Returns n_embd floats. Throws if ids is empty.
  std::vector<float> mean_row(std::span<const std::int32_t> ids) const;

 private:
  util::FileReader file_;
  int n_embd_ = 0;
  int n_vocab_ = 0;
  int type_ = 0;  // ggml_type
  std::string type_name_;
  std::uint64_t data_offset_ = 0;  // absolute file offset of row 0
  std::size_t row_bytes_ = 0;
};

}  // namespace clef::lexical
