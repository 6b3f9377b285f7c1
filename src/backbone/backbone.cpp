#include "backbone/backbone.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>

// llama_set_embeddings_nextn / llama_get_embeddings_nextn are declared only in the pinned tree's
// uninstalled staging header (C++ linkage). clef pins that llama.cpp version (cmake/llama-pin.env),
// so including it here, and only here, is deliberate.
#include <llama-ext.h>

#include "device/device.hpp"
#include "util/error.hpp"

namespace clef::backbone {
namespace {

bool progress_trampoline(float progress, void* user_data) {
  const auto& fn = *static_cast<const std::function<bool(float)>*>(user_data);
  return fn(progress);
}

[[noreturn]] void bad_prefill(const std::string& what) {
  throw Error(ErrorKind::internal, "backbone_failed", "prefill: " + what);
}

/// The storage of one llama_batch of one sequence, no output rows (the llama_batch fields point
/// into it; nothing is allocated by libllama).
class BatchStorage {
 public:
  explicit BatchStorage(int capacity)
      : n_seq_id_(capacity, 1), seq_ptrs_(capacity, &seq0_), logits_(capacity, 0) {}

  /// A batch over `n` tokens: `tokens` or `embd` (exactly one non-null) and `pos`.
  llama_batch view(int n, const std::int32_t* tokens, const float* embd,
                   std::vector<std::int32_t>& pos) {
    llama_batch b{};
    b.n_tokens = n;
    // libllama only reads the inputs; its llama_batch has non-const pointers.
    b.token = const_cast<std::int32_t*>(tokens);
    b.embd = const_cast<float*>(embd);
    b.pos = pos.data();
    b.n_seq_id = n_seq_id_.data();
    b.seq_id = seq_ptrs_.data();
    b.logits = logits_.data();  // no LM-head row for any token
    return b;
  }

 private:
  llama_seq_id seq0_ = 0;
  std::vector<std::int32_t> n_seq_id_;
  std::vector<llama_seq_id*> seq_ptrs_;
  std::vector<std::int8_t> logits_;
};

}  // namespace

std::vector<PrefillBatch> prefill_batches(int total, std::span<const EmbeddingSpan> spans,
                                          int chunk, std::span<const int> cuts) {
  if (chunk < 1) bad_prefill("chunk size " + std::to_string(chunk));
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    if (cuts[i] < 0 || cuts[i] > total || (i > 0 && cuts[i] < cuts[i - 1])) {
      bad_prefill("layout cut " + std::to_string(cuts[i]) + " is out of order or outside a " +
                  std::to_string(total) + "-token record");
    }
  }
  std::vector<PrefillBatch> out;
  std::size_t next_cut = 0;
  auto add_chunks = [&](int begin, int end, bool embeddings) {
    for (int start = begin; start < end;) {
      const int n = chunk_length(end - begin, start - begin, chunk);
      out.push_back({start, n, embeddings});
      start += n;
    }
  };
  // A text segment is cut further at `cuts`; an embedding span is one segment.
  auto add_segment = [&](int begin, int end, bool embeddings) {
    if (embeddings) return add_chunks(begin, end, true);
    while (next_cut < cuts.size() && cuts[next_cut] <= begin) ++next_cut;
    for (; next_cut < cuts.size() && cuts[next_cut] < end; ++next_cut) {
      add_chunks(begin, cuts[next_cut], false);
      begin = cuts[next_cut];
    }
    add_chunks(begin, end, false);
  };
  int at = 0;
  for (const EmbeddingSpan& s : spans) {
    if (s.n_tokens <= 0 || s.first < at || s.first > total - s.n_tokens) {
      bad_prefill("embedding span [" + std::to_string(s.first) + ", +" +
                  std::to_string(s.n_tokens) + ") does not fit a " + std::to_string(total) +
                  "-token record in order");
    }
    add_segment(at, s.first, false);
    add_segment(s.first, s.first + s.n_tokens, true);
    at = s.first + s.n_tokens;
  }
  add_segment(at, total, false);
  return out;
}

std::vector<std::int32_t> batch_positions(const PrefillBatch& batch,
                                          std::span<const RopePosition> positions) {
  const auto n = static_cast<std::size_t>(batch.n_tokens);
  const auto at = static_cast<std::size_t>(batch.start);
  if (!positions.empty() && at + n > positions.size()) bad_prefill("fewer positions than tokens");
  auto pos = [&](std::size_t i) {
    return positions.empty()
               ? RopePosition{static_cast<std::int32_t>(at + i), static_cast<std::int32_t>(at + i),
                              static_cast<std::int32_t>(at + i), static_cast<std::int32_t>(at + i)}
               : positions[at + i];
  };
  std::vector<std::int32_t> out;
  if (!batch.embeddings) {
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const RopePosition p = pos(i);
      if (p.h != p.t || p.w != p.t || p.z != p.t) {
        bad_prefill("text token " + std::to_string(at + i) + " has different M-RoPE sections");
      }
      out[i] = p.t;
    }
    return out;
  }
  out.resize(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const RopePosition p = pos(i);
    out[i] = p.t;
    out[n + i] = p.h;
    out[2 * n + i] = p.w;
    out[3 * n + i] = p.z;
  }
  return out;
}

int chunk_length(int total, int start, int chunk) {
  const int left = total - start;
  if (left <= chunk) return left;
  // A one-token decode takes llama.cpp's single-token kernels (Gated DeltaNet's autoregressive
  // path, gemv), whose rounding differs from the batched ones: never leave a 1-token last chunk.
  // Moving a whole row block keeps the boundary aligned for repacked weights.
  if (left == chunk + 1) {
    if (chunk > kBatchRowAlignment) return chunk - kBatchRowAlignment;
    if (chunk > 1) return chunk - 1;
  }
  return chunk;
}

int Backbone::n_layer() const noexcept {
  return llama_model_n_layer(model());
}

llama_model_params Backbone::model_params(const BackboneParams& params,
                                          std::span<const llama_model_kv_override> kv_overrides) {
  llama_model_params mp = llama_model_default_params();
  const device::Placement placement = device::resolve(params.device, params.gpu_layers);
  mp.n_gpu_layers = placement.gpu_layers;
  // Only the chosen GPU (llama.cpp would spread layers over every GPU it finds), or none at all.
  static ggml_backend_dev_t no_devices[] = {nullptr};
  mp.devices = placement.gpu != nullptr ? device::as_device_list(placement.gpu) : no_devices;
  mp.load_mode = LLAMA_LOAD_MODE_MMAP;
  mp.use_extra_bufts = params.weight_repacking;
  if (!kv_overrides.empty()) {
    if (kv_overrides.back().key[0] != '\0') {
      throw std::invalid_argument("Backbone: kv_overrides must end with an empty-key entry");
    }
    mp.kv_overrides = kv_overrides.data();
  }
  if (params.on_progress) {
    mp.progress_callback = progress_trampoline;
    // llama.cpp only reads through this pointer during the load, while `params` is alive.
    mp.progress_callback_user_data = const_cast<std::function<bool(float)>*>(&params.on_progress);
  }
  return mp;
}

Backbone::Backbone(const std::string& gguf_path, const BackboneParams& params,
                   std::span<const llama_model_kv_override> kv_overrides)
    : params_(params) {
  validate(params_);
  ensure_llama_backend();
  const llama_model_params mp = model_params(params_, kv_overrides);
  LlamaModelPtr model(llama_model_load_from_file(gguf_path.c_str(), mp));
  if (!model) throw model_error("cannot load backbone GGUF '" + gguf_path + "' (see log above)");
  init(std::move(model), gguf_path);
}

Backbone::Backbone(LlamaModelPtr model, const BackboneParams& params, const std::string& name)
    : params_(params) {
  validate(params_);
  if (!model) throw std::invalid_argument("Backbone: null model");
  init(std::move(model), name);
}

void Backbone::init(LlamaModelPtr model, const std::string& name) {
  model_ = std::move(model);
  name_ = name;
  char arch[64] = {0};
  llama_model_meta_val_str(model_.get(), "general.architecture", arch, sizeof arch);
  if (std::string(arch) != "qwen35") {
    throw model_error("backbone '" + name + "' has architecture '" + arch +
                      "'; clef needs a qwen35 backbone");
  }
  n_embd_ = llama_model_n_embd(model_.get());
  const llama_rope_type rope = llama_model_rope_type(model_.get());
  mrope_ = rope == LLAMA_ROPE_TYPE_MROPE || rope == LLAMA_ROPE_TYPE_IMROPE;

  make_context();
}

void Backbone::make_context() {
  ctx_.reset();  // first: the old context's buffers are freed before the new ones are made
  const int threads = resolved_threads(params_);
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
  // On the CPU nothing goes to a GPU, not even the large matrix products llama.cpp would copy
  // there for a batch (op_offload).
  cp.op_offload = device::resolve(params_.device, params_.gpu_layers).gpu != nullptr;
  ctx_.reset(llama_init_from_model(model_.get(), cp));
  if (!ctx_) throw model_error("cannot create a llama context for '" + name_ + "'");
  // Unmasked: rows for every token of the last llama_decode call, whatever batch.logits says.
  llama_set_embeddings_nextn(ctx_.get(), true, false);
  longest_record_ = 0;
}

void Backbone::release_compute_memory() {
  make_context();
}

int Backbone::n_vocab() const noexcept {
  return llama_vocab_n_tokens(vocab());
}

const llama_vocab* Backbone::vocab() const noexcept {
  return llama_model_get_vocab(model_.get());
}

HiddenStates Backbone::hidden_states(std::span<const std::int32_t> ids,
                                     const Cancelled& cancelled) {
  return hidden_states(ids, {}, {}, cancelled);
}

namespace {

/// llama.cpp's abort callback over a Cancelled (a throw must not cross the C API: false then).
bool abort_if_cancelled(void* data) {
  try {
    return (*static_cast<const Cancelled*>(data))();
  } catch (...) {
    return false;
  }
}

/// Installs `cancelled` as the context's abort callback for one prefill; removes it on exit.
class AbortCallbackScope {
 public:
  AbortCallbackScope(llama_context* ctx, const Cancelled& cancelled) : ctx_(ctx) {
    if (cancelled)
      llama_set_abort_callback(ctx_, abort_if_cancelled, const_cast<Cancelled*>(&cancelled));
  }
  ~AbortCallbackScope() { llama_set_abort_callback(ctx_, nullptr, nullptr); }
  AbortCallbackScope(const AbortCallbackScope&) = delete;
  AbortCallbackScope& operator=(const AbortCallbackScope&) = delete;

 private:
  llama_context* ctx_;
};

[[noreturn]] void throw_cancelled(int at_token) {
  throw DecisionCancelled("the client closed the connection; the decision was cancelled at token " +
                          std::to_string(at_token));
}

}  // namespace

HiddenStates Backbone::hidden_states(std::span<const std::int32_t> ids,
                                     std::span<const RopePosition> positions,
                                     std::span<const EmbeddingSpan> embeddings,
                                     const Cancelled& cancelled) {
  return hidden_states(ids, positions, embeddings, PrefillOptions{}, cancelled);
}

HiddenStates Backbone::hidden_states(std::span<const std::int32_t> ids,
                                     std::span<const RopePosition> positions,
                                     std::span<const EmbeddingSpan> embeddings,
                                     const PrefillOptions& reuse, const Cancelled& cancelled) {
  const int total = static_cast<int>(ids.size());
  if (total == 0) throw invalid_request("a record needs at least one token");
  if (total > params_.context_size) {
    throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                "record has " + std::to_string(total) + " tokens; the context size is " +
                    std::to_string(params_.context_size));
  }
  if (!positions.empty() && positions.size() != ids.size()) {
    bad_prefill(std::to_string(positions.size()) + " positions for " + std::to_string(total) +
                " tokens");
  }
  if (!embeddings.empty() && !mrope_) {
    bad_prefill("embedding inputs need an M-RoPE backbone");
  }
  const int resumed = reuse.resume_checkpoint != nullptr ? reuse.resume_checkpoint->tokens
                      : reuse.resume != nullptr          ? reuse.resume->tokens
                                                         : 0;
  for (const EmbeddingSpan& s : embeddings) {
    if (s.first + s.n_tokens <= resumed && s.rows.empty()) continue;  // inside the resumed part
    if (s.rows.size() != static_cast<std::size_t>(s.n_tokens) * n_embd_) {
      bad_prefill("an embedding span of " + std::to_string(s.n_tokens) + " tokens has " +
                  std::to_string(s.rows.size()) + " values (n_embd " + std::to_string(n_embd_) +
                  ")");
    }
  }
  const std::vector<PrefillBatch> batches =
      prefill_batches(total, embeddings, params_.chunk_tokens, reuse.cuts);
  auto is_boundary = [&](int at) {
    return at == total || std::any_of(batches.begin(), batches.end(),
                                      [at](const PrefillBatch& b) { return b.start == at; });
  };
  const bool bad_checkpoint =
      reuse.resume_checkpoint != nullptr &&
      (reuse.resume == nullptr || !reuse.resume_checkpoint->partial || reuse.resume->partial ||
       reuse.resume_checkpoint->tokens >= reuse.resume->tokens);
  if ((reuse.resume != nullptr || reuse.resume_checkpoint != nullptr) &&
      (bad_checkpoint || resumed <= 0 || resumed >= total || !is_boundary(resumed) ||
       reuse.resume_rows.size() != static_cast<std::size_t>(resumed) * n_embd_)) {
    bad_prefill("a resumed memory of " + std::to_string(resumed) + " tokens with " +
                std::to_string(reuse.resume_rows.size()) + " row values does not fit the layout");
  }
  for (std::span<const int> points : {reuse.snapshot_at, reuse.checkpoint_at}) {
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (points[i] <= resumed || !is_boundary(points[i]) ||
          (i > 0 && points[i] <= points[i - 1])) {
        bad_prefill("snapshot point " + std::to_string(points[i]) +
                    " is not a later batch boundary");
      }
    }
  }

  // Fresh KV and recurrent state: nothing of the previous record may leak into this one.
  llama_memory_clear(llama_get_memory(ctx_.get()), true);
  longest_record_ = std::max(longest_record_, total);

  HiddenStates out;
  out.rows = total;
  out.n_embd = n_embd_;
  out.data.resize(static_cast<std::size_t>(total) * n_embd_);
  if (reuse.resume != nullptr) {
    restore(reuse, positions);
    std::copy(reuse.resume_rows.begin(), reuse.resume_rows.end(), out.data.begin());
  }

  BatchStorage storage(params_.chunk_tokens);
  std::optional<AbortCallbackScope> abort_scope(std::in_place, ctx_.get(), cancelled);
  std::size_t span_index = 0;
  bool first_batch = true;
  std::size_t next_snapshot = 0;
  std::size_t next_checkpoint = 0;
  for (const PrefillBatch& pb : batches) {
    if (pb.start < resumed) continue;
    if (!first_batch && reuse.preemption != nullptr && reuse.preemption->wanted()) {
      // Others run on this context now; the memory is set back before this batch.
      const MemorySnapshot paused = take_snapshot(pb.start, false);
      abort_scope.reset();
      reuse.preemption->run_others();
      llama_memory_clear(llama_get_memory(ctx_.get()), true);
      if (llama_state_seq_set_data(ctx_.get(), paused.data.data(), paused.data.size(), 0) !=
          paused.data.size()) {
        llama_memory_clear(llama_get_memory(ctx_.get()), true);
        bad_prefill("llama.cpp did not take back a paused prefill's memory");
      }
      abort_scope.emplace(ctx_.get(), cancelled);
      ++out.preemptions;
    }
    first_batch = false;
    if (cancelled && abort_if_cancelled(const_cast<Cancelled*>(&cancelled))) {
      throw_cancelled(pb.start);
    }
    std::vector<std::int32_t> pos = batch_positions(pb, positions);
    const float* embd = nullptr;
    if (pb.embeddings) {
      while (embeddings[span_index].first + embeddings[span_index].n_tokens <= pb.start) {
        ++span_index;
      }
      const EmbeddingSpan& s = embeddings[span_index];
      embd = s.rows.data() + static_cast<std::size_t>(pb.start - s.first) * n_embd_;
    }
    const llama_batch b =
        storage.view(pb.n_tokens, pb.embeddings ? nullptr : ids.data() + pb.start, embd, pos);
    const int rc = llama_decode(ctx_.get(), b);
    if (rc == 2 && cancelled) throw_cancelled(pb.start);  // 2: aborted by the callback
    if (rc != 0) {
      throw Error(ErrorKind::internal, "backbone_failed",
                  "llama_decode failed with code " + std::to_string(rc) + " at token " +
                      std::to_string(pb.start));
    }
    const float* rows = llama_get_embeddings_nextn(ctx_.get());
    if (rows == nullptr) {
      throw Error(ErrorKind::internal, "backbone_failed", "backbone returned no hidden states");
    }
    std::memcpy(out.data.data() + static_cast<std::size_t>(pb.start) * n_embd_, rows,
                sizeof(float) * static_cast<std::size_t>(pb.n_tokens) * n_embd_);
    const int done = pb.start + pb.n_tokens;
    if (next_checkpoint < reuse.checkpoint_at.size() &&
        reuse.checkpoint_at[next_checkpoint] == done) {
      out.checkpoints.push_back(take_snapshot(done, true));
      ++next_checkpoint;
    }
    if (next_snapshot < reuse.snapshot_at.size() && reuse.snapshot_at[next_snapshot] == done) {
      out.snapshots.push_back(take_snapshot(done, false));
      ++next_snapshot;
    }
  }
  return out;
}

MemorySnapshot Backbone::take_snapshot(int tokens, bool partial) {
  const llama_state_seq_flags flags =
      partial ? LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY : LLAMA_STATE_SEQ_FLAGS_NONE;
  MemorySnapshot m;
  m.tokens = tokens;
  m.partial = partial;
  m.data.resize(llama_state_seq_get_size_ext(ctx_.get(), 0, flags));
  if (llama_state_seq_get_data_ext(ctx_.get(), m.data.data(), m.data.size(), 0, flags) !=
      m.data.size()) {
    bad_prefill("llama.cpp wrote a short memory snapshot");
  }
  return m;
}

int Backbone::restore(const PrefillOptions& reuse, std::span<const RopePosition> positions) {
  llama_context* ctx = ctx_.get();
  auto fail = [&](const std::string& what) {
    llama_memory_clear(llama_get_memory(ctx), true);
    bad_prefill(what);
  };
  const MemorySnapshot& full = *reuse.resume;
  if (llama_state_seq_set_data_ext(ctx, full.data.data(), full.data.size(), 0,
                                   LLAMA_STATE_SEQ_FLAGS_NONE) != full.data.size()) {
    fail("llama.cpp did not take back a memory snapshot of " + std::to_string(full.tokens) +
         " tokens");
  }
  if (reuse.resume_checkpoint == nullptr) return full.tokens;
  // The recurrent states at c first (the recurrent memory cannot be cut back, llama-probes.md
  // section 3), then the attention KV from token c's position on.
  const MemorySnapshot& at = *reuse.resume_checkpoint;
  if (llama_state_seq_set_data_ext(ctx, at.data.data(), at.data.size(), 0,
                                   LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) != at.data.size()) {
    fail("llama.cpp did not take back a checkpoint of " + std::to_string(at.tokens) + " tokens");
  }
  const llama_pos from =
      positions.empty() ? at.tokens : positions[static_cast<std::size_t>(at.tokens)].t;
  if (!llama_memory_seq_rm(llama_get_memory(ctx), 0, from, -1)) {
    fail("llama.cpp did not cut the memory back to " + std::to_string(at.tokens) + " tokens");
  }
  return at.tokens;
}

}  // namespace clef::backbone
