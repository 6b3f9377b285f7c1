#include "backbone/backbone.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

// llama_set_embeddings_nextn / llama_get_embeddings_nextn are declared only in the pinned tree's
// uninstalled staging header (C++ linkage). clef pins that llama.cpp version (cmake/llama-pin.env),
// so including it here, and only here, is deliberate.
#include <llama-ext.h>

#include "util/error.hpp"

namespace clef::backbone {
namespace {

bool progress_trampoline(float progress, void* user_data) {
  const auto& fn = *static_cast<const std::function<bool(float)>*>(user_data);
  return fn(progress);
}

/// RAII llama_batch (llama_batch_init / llama_batch_free).
class Batch {
 public:
  explicit Batch(int capacity) : batch_(llama_batch_init(capacity, 0, 1)) {}
  ~Batch() { llama_batch_free(batch_); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  llama_batch& get() { return batch_; }

 private:
  llama_batch batch_;
};

}  // namespace

int chunk_length(int total, int start, int chunk) {
  const int left = total - start;
  if (left <= chunk) return left;
  // A one-token decode takes llama.cpp's single-token kernels (Gated DeltaNet's autoregressive
  // path, gemv), whose rounding differs from the batched ones: never leave a 1-token last chunk.
  if (chunk > 1 && left == chunk + 1) return chunk - 1;
  return chunk;
}

Backbone::Backbone(const std::string& gguf_path, const BackboneParams& params,
                   std::span<const llama_model_kv_override> kv_overrides)
    : params_(params) {
  validate(params_);
  ensure_llama_backend();

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = params_.gpu_layers;
  mp.load_mode = LLAMA_LOAD_MODE_MMAP;
  mp.use_extra_bufts = params_.weight_repacking;
  if (!kv_overrides.empty()) {
    if (kv_overrides.back().key[0] != '\0') {
      throw std::invalid_argument("Backbone: kv_overrides must end with an empty-key entry");
    }
    mp.kv_overrides = kv_overrides.data();
  }
  if (params_.on_progress) {
    mp.progress_callback = progress_trampoline;
    mp.progress_callback_user_data = &params_.on_progress;
  }
  model_.reset(llama_model_load_from_file(gguf_path.c_str(), mp));
  if (!model_) throw model_error("cannot load backbone GGUF '" + gguf_path + "' (see log above)");

  char arch[64] = {0};
  llama_model_meta_val_str(model_.get(), "general.architecture", arch, sizeof arch);
  if (std::string(arch) != "qwen35") {
    throw model_error("backbone '" + gguf_path + "' has architecture '" + arch +
                      "'; clef needs a qwen35 backbone");
  }
  n_embd_ = llama_model_n_embd(model_.get());

  const int threads = params_.threads > 0
                          ? params_.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(params_.context_size);
  cp.n_batch = static_cast<uint32_t>(params_.chunk_tokens);
  cp.n_ubatch = static_cast<uint32_t>(params_.chunk_tokens);
  cp.n_seq_max = 1;
  // Hidden states come from the nextn path for every token; no token needs logits, so the
  // output buffers are sized for one row (llama-probes.md section 2: 298 MiB -> 5.5 MiB).
  cp.n_outputs_max = 1;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.embeddings = false;
  cp.flash_attn_type =
      params_.flash_attention ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  ctx_.reset(llama_init_from_model(model_.get(), cp));
  if (!ctx_) throw model_error("cannot create a llama context for '" + gguf_path + "'");
  // Unmasked: rows for every token of the last llama_decode call, whatever batch.logits says.
  llama_set_embeddings_nextn(ctx_.get(), true, false);
}

int Backbone::n_vocab() const noexcept {
  return llama_vocab_n_tokens(vocab());
}

const llama_vocab* Backbone::vocab() const noexcept {
  return llama_model_get_vocab(model_.get());
}

HiddenStates Backbone::hidden_states(std::span<const std::int32_t> ids) {
  const int total = static_cast<int>(ids.size());
  if (total == 0) throw invalid_request("a record needs at least one token");
  if (total > params_.context_size) {
    throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                "record has " + std::to_string(total) + " tokens; the context size is " +
                    std::to_string(params_.context_size));
  }
  // Fresh KV and recurrent state: nothing of the previous record may leak into this one.
  llama_memory_clear(llama_get_memory(ctx_.get()), true);

  HiddenStates out;
  out.rows = total;
  out.n_embd = n_embd_;
  out.data.resize(static_cast<std::size_t>(total) * n_embd_);

  const int chunk = params_.chunk_tokens;
  Batch batch(chunk);
  for (int start = 0; start < total;) {
    const int n = chunk_length(total, start, chunk);
    llama_batch& b = batch.get();
    b.n_tokens = n;
    for (int i = 0; i < n; ++i) {
      b.token[i] = ids[start + i];
      b.pos[i] = start + i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = 0;  // no LM-head row for any token
    }
    const int rc = llama_decode(ctx_.get(), b);
    if (rc != 0) {
      throw Error(ErrorKind::internal, "backbone_failed",
                  "llama_decode failed with code " + std::to_string(rc) + " at token " +
                      std::to_string(start));
    }
    const float* rows = llama_get_embeddings_nextn(ctx_.get());
    if (rows == nullptr) {
      throw Error(ErrorKind::internal, "backbone_failed", "backbone returned no hidden states");
    }
    std::memcpy(out.data.data() + static_cast<std::size_t>(start) * n_embd_, rows,
                sizeof(float) * static_cast<std::size_t>(n) * n_embd_);
    start += n;
  }
  return out;
}

}  // namespace clef::backbone
