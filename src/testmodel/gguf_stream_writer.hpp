#pragma once
// Writes a GGUF file whose tensors are random and generated while writing: the metadata (keys and
// tensor infos) is built with ggml's gguf API, written with gguf_get_meta_data, and each tensor's
// data is then drawn row block by row block, converted to its ggml type and appended, so even a
// multi-GB model never sits in memory.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "gguf/handles.hpp"
#include "testmodel/init.hpp"

namespace clef::testmodel {

/// One tensor: GGUF name, ggml shape `ne` (innermost first, i.e. the torch shape reversed),
/// stored type (F32, F16, BF16 or a quant type whose block divides ne[0]) and value law.
struct GgufTensorSpec {
  std::string name;
  std::vector<std::int64_t> ne;
  ggml_type type;
  Init init;
};

class GgufStreamWriter {
 public:
  /// `stream_label` separates the random streams of different files made with the same seed.
  explicit GgufStreamWriter(std::string stream_label);

  /// The key/value store to fill with gguf_set_* before write().
  gguf_context* kv() { return gguf_.get(); }

  /// Quantized tensors (any type but F32/F16/BF16) are then written from a pool of 4,096 blocks
  /// quantized from each tensor's law, picked at random per block: the same distribution of
  /// values, without quantizing every value (a 9B-shaped Q4_K_M backbone in about a minute instead
  /// of an hour). Off by default (every value drawn and quantized).
  void set_pooled_quant_blocks(bool on) { pooled_quant_blocks_ = on; }

  /// Registers a tensor (written in registration order). Throws std::invalid_argument for a
  /// duplicate name, a name longer than GGML_MAX_NAME-1 or ne[0] not a multiple of the block size.
  void add_tensor(GgufTensorSpec spec);

  /// Writes the file (through `path` + ".tmp", renamed at the end). Tensor t's values come from
  /// Rng(derive_seed(seed, stream_label + "/" + t.name)), so they do not depend on the order or
  /// on the other tensors. Throws std::runtime_error on I/O failure.
  void write(const std::filesystem::path& path, std::uint64_t seed) const;

 private:
  /// Writes the whole file to `tmp` (write() renames it into place).
  void write_unrenamed(const std::filesystem::path& tmp, std::uint64_t seed) const;

  std::string label_;
  gguf::GgufContextPtr gguf_;
  gguf::GgmlContextPtr meta_;  ///< no_alloc: tensor headers only
  std::vector<GgufTensorSpec> specs_;
  bool pooled_quant_blocks_ = false;
};

}  // namespace clef::testmodel
