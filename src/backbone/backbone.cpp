// Backbone: one llama.cpp context and everything done on it (prefills in pieces, batched steps,
// suspend/resume, memory snapshots, the context's making and sizing). The pure layout math is in
// prefill_layout.cpp; the rest stays in one file (~650 lines) because it shares the context's
// private state (its sequences, abort callback and compute buffers).
#include "backbone/backbone.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

// llama_set_embeddings_nextn / llama_get_embeddings_nextn are declared only in the pinned tree's
// uninstalled staging header (C++ linkage). clef pins that llama.cpp version (cmake/llama-pin.env),
// so including it here, and only here, is deliberate.
#include <llama-ext.h>

#include "device/device.hpp"
#include "util/error.hpp"
#include "util/physical_memory.hpp"

namespace clef::backbone {
namespace {

bool progress_trampoline(float progress, void* user_data) {
  const auto& fn = *static_cast<const std::function<bool(float)>*>(user_data);
  return fn(progress);
}

[[noreturn]] void bad_prefill(const std::string& what) {
  throw Error(ErrorKind::internal, "backbone_failed", "prefill: " + what);
}

/// The storage of one llama_batch, no output rows (the llama_batch fields point into it; nothing
/// is allocated by libllama): tokens or embedding rows, positions, and each token's one sequence.
struct BatchStorage {
  std::vector<std::int32_t> tokens;
  std::vector<float> embd;
  std::vector<std::int32_t> pos;
  std::vector<llama_seq_id> seq;
  std::vector<std::int32_t> n_seq_id;
  std::vector<llama_seq_id*> seq_ptrs;
  std::vector<std::int8_t> logits;

  /// The llama_batch over what was filled in (`embeddings`: embd, else tokens).
  llama_batch view(bool embeddings) {
    const std::size_t n = seq.size();
    n_seq_id.assign(n, 1);
    seq_ptrs.resize(n);
    for (std::size_t i = 0; i < n; ++i) seq_ptrs[i] = &seq[i];
    logits.assign(n, 0);  // no LM-head row for any token
    llama_batch b{};
    b.n_tokens = static_cast<std::int32_t>(n);
    b.token = embeddings ? nullptr : tokens.data();
    b.embd = embeddings ? embd.data() : nullptr;
    b.pos = pos.data();
    b.n_seq_id = n_seq_id.data();
    b.seq_id = seq_ptrs.data();
    b.logits = logits.data();
    return b;
  }
};

}  // namespace

std::string mebibytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1u << 20));
  return text;
}

std::string describe_sequence_memory(const SequenceMemory& memory, int parallel) {
  return mebibytes(memory.per_sequence) + " per sequence (" +
         std::to_string(memory.kv_bytes_per_token) + " B of KV per token of the context, " +
         mebibytes(memory.recurrent_bytes) + " of recurrent state), " +
         mebibytes(memory.per_sequence * static_cast<std::uint64_t>(parallel)) + " in all";
}

void check_parallel_fits(const SequenceMemory& memory, int parallel, std::uint64_t room,
                         const std::string& device) {
  const std::uint64_t needed = memory.per_sequence * static_cast<std::uint64_t>(parallel);
  if (room == 0 || needed <= room) return;
  throw invalid_request("parallel " + std::to_string(parallel) + " needs " + mebibytes(needed) +
                            " of sequence memory (" + describe_sequence_memory(memory, parallel) +
                            "); " + device + " has " + mebibytes(room) +
                            ". Lower parallel or context_size.",
                        "parallel");
}

int Backbone::n_layer() const noexcept {
  return llama_model_n_layer(model());
}

llama_model_params BackboneWeights::model_params(
    const BackboneParams& params, std::span<const llama_model_kv_override> kv_overrides) {
  llama_model_params mp = llama_model_default_params();
  const device::Placement placement = device::resolve(params.device, params.gpu_layers);
  mp.n_gpu_layers = placement.gpu_layers;
  // Only the chosen GPU (llama.cpp would spread layers over every GPU it finds), or none at all.
  static ggml_backend_dev_t no_devices[] = {nullptr};
  mp.devices = placement.gpu != nullptr ? device::as_device_list(placement.gpu) : no_devices;
  mp.load_mode = LLAMA_LOAD_MODE_MMAP;
  mp.use_extra_bufts = params.weight_repacking;
  device::use_cpu_amx(params.cpu_amx);  // before llama.cpp lists the CPU's extra buffer types
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

Backbone::Backbone(std::shared_ptr<const BackboneWeights> weights, const BackboneParams& params)
    : params_(params), weights_(std::move(weights)) {
  validate(params_);
  if (!weights_) throw std::invalid_argument("Backbone: null weights");
  weights_->check_context_params(params_);
  init();
}

Backbone::Backbone(const std::string& gguf_path, const BackboneParams& params,
                   std::span<const llama_model_kv_override> kv_overrides)
    : Backbone(BackboneWeights::load(gguf_path, params, kv_overrides), params) {}

Backbone::Backbone(LlamaModelPtr model, const BackboneParams& params, const std::string& name)
    : Backbone(std::make_shared<const BackboneWeights>(std::move(model), params, name), params) {}

void Backbone::init() {
  make_context(1);
  sequence_memory_ = measure_sequence_memory();
  if (params_.parallel > 1) {
    const device::Placement placement = device::resolve(params_.device, params_.gpu_layers);
    // On a GPU what is free now; on the CPU the machine's memory (what else runs comes and goes).
    const std::uint64_t room =
        placement.gpu != nullptr ? placement.info.memory_free : placement.info.memory_total;
    check_parallel_fits(sequence_memory_, params_.parallel, room, placement.info.name);
    make_context(params_.parallel);
  }
}

namespace {
/// Host bytes ggml's scheduler takes at once for a context of `chunk_tokens`-token batches.
std::uint64_t scheduler_metadata_bytes(int chunk_tokens) {
  // llama_context::graph_max_nodes for qwen35: 40 graph nodes per token of a batch; ggml's
  // scheduler then sizes its context for one split per node, each with up to
  // GGML_SCHED_MAX_SPLIT_INPUTS (30) inputs copied twice (ggml-backend.cpp,
  // ggml_backend_sched_new), and allocates it at once.
  constexpr std::uint64_t kNodesPerToken = 40, kSplitInputs = 30;
  return static_cast<std::uint64_t>(chunk_tokens) * kNodesPerToken * kSplitInputs * 2 *
         sizeof(ggml_tensor);
}
}  // namespace

llama_context_params Backbone::context_params(const BackboneParams& params, int sequences) {
  const int threads = resolved_threads(params);
  llama_context_params cp = llama_context_default_params();
  // One KV stream of context_size cells per sequence (kv_unified off: a sequence's cells start at
  // 0 of its own stream whatever the others hold, so its attention sums are those of a record
  // alone).
  cp.n_ctx = static_cast<uint32_t>(params.context_size) * static_cast<uint32_t>(sequences);
  cp.n_batch = static_cast<uint32_t>(params.chunk_tokens);
  cp.n_ubatch = static_cast<uint32_t>(params.chunk_tokens);
  cp.n_seq_max = static_cast<uint32_t>(sequences);
  cp.kv_unified = false;
  // Hidden states come from the nextn path for every token; no token needs logits, so the
  // output buffers are sized for one row per sequence, the least llama.cpp takes (llama-probes.md
  // section 2: 298 MiB -> 5.5 MiB for one).
  cp.n_outputs_max = static_cast<uint32_t>(sequences);
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.embeddings = false;
  cp.flash_attn_type =
      params.flash_attention ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  // On the CPU nothing goes to a GPU, not even the large matrix products llama.cpp would copy
  // there for a batch (op_offload).
  cp.op_offload = device::resolve(params.device, params.gpu_layers).gpu != nullptr;
  return cp;
}

void check_scheduler_metadata(const BackboneParams& params) {
  // ggml aborts the process when its scheduler's metadata cannot be allocated: refuse first.
  if (const std::uint64_t meta = scheduler_metadata_bytes(params.chunk_tokens);
      meta > util::physical_memory_bytes() / 2) {
    throw invalid_request("chunk_tokens " + std::to_string(params.chunk_tokens) + " needs " +
                              mebibytes(meta) +
                              " of ggml scheduler metadata (40 graph nodes a token), over half "
                              "of this machine's memory; lower chunk_tokens",
                          "chunk_tokens");
  }
}

namespace {

/// An integer of the backbone's GGUF metadata under its architecture ("qwen35.KEY"), or
/// `fallback` when absent.
std::int64_t arch_value(const llama_model* model, const std::string& key, std::int64_t fallback) {
  char value[64] = {0};
  if (llama_model_meta_val_str(model, (architecture_of(model) + "." + key).c_str(), value,
                               sizeof value) <= 0) {
    return fallback;
  }
  return std::strtoll(value, nullptr, 10);
}

}  // namespace

void check_kv_tensors(const llama_model* model, const BackboneParams& params, int sequences) {
  const device::Placement placement = device::resolve(params.device, params.gpu_layers);
  if (placement.gpu == nullptr || params.gpu_layers == 0) return;
  const std::int64_t heads = std::max<std::int32_t>(1, llama_model_n_head(model));
  const std::int64_t head_dim = std::max<std::int64_t>(
      arch_value(model, "attention.key_length", llama_model_n_embd(model) / heads),
      arch_value(model, "attention.value_length", llama_model_n_embd(model) / heads));
  const std::int64_t width = head_dim * std::max<std::int32_t>(1, llama_model_n_head_kv(model));
  // A tensor of the K cache's shape (llama-kv-cache.cpp: [n_embd_k_gqa, kv_size, n_stream], F16)
  // in a context that allocates nothing, asked of the device as a graph leaf.
  // Room for the tensors of a binary search over 1..sequences (at most 40 steps).
  ggml_init_params ip{ggml_tensor_overhead() * 48, nullptr, true};
  const std::unique_ptr<ggml_context, decltype(&ggml_free)> meta(ggml_init(ip), ggml_free);
  const auto fits = [&](int n) {
    ggml_tensor* k = ggml_new_tensor_3d(meta.get(), GGML_TYPE_F16, width, params.context_size, n);
    return ggml_backend_dev_supports_op(placement.gpu, k);
  };
  if (fits(sequences)) return;
  int most = 0;  // fits (no sequence at all); `sequences` does not
  for (int over = sequences; over - most > 1;) {
    const int mid = most + (over - most) / 2;
    (fits(mid) ? most : over) = mid;
  }
  const std::uint64_t bytes = static_cast<std::uint64_t>(width) *
                              static_cast<std::uint64_t>(params.context_size) *
                              static_cast<std::uint64_t>(sequences) * 2;
  const std::string arithmetic =
      "one attention layer's K cache is one tensor of " + std::to_string(width) +
      " values (key_length x KV heads) x " + std::to_string(params.context_size) + " tokens x " +
      std::to_string(sequences) + " sequences x 2 bytes = " + mebibytes(bytes) + ", more than " +
      placement.info.name + " takes in one buffer";
  if (most < 1) {
    throw invalid_request("context_size " + std::to_string(params.context_size) + ": " +
                              arithmetic + "; lower context_size",
                          "context_size");
  }
  throw invalid_request("parallel " + std::to_string(sequences) + " x context_size " +
                            std::to_string(params.context_size) + ": " + arithmetic + "; at most " +
                            std::to_string(most) +
                            " sequences of this context fit (lower parallel or context_size)",
                        "parallel");
}

void Backbone::make_context(int sequences) {
  ctx_.reset();  // first: the old context's buffers are freed before the new ones are made
  check_scheduler_metadata(params_);
  check_kv_tensors(model(), params_, sequences);
  const llama_context_params cp = context_params(params_, sequences);
  ctx_.reset(llama_init_from_model(weights_->model(), cp));
  if (!ctx_ && sequences > 1) {
    throw invalid_request("cannot create a llama context of " + std::to_string(sequences) +
                              " sequences x " + std::to_string(params_.context_size) +
                              " tokens for '" + weights_->name() + "' (" +
                              describe_sequence_memory(sequence_memory_, sequences) +
                              "; see the log above). Lower parallel or context_size.",
                          "parallel");
  }
  if (!ctx_)
    throw model_error("cannot create a llama context for '" + weights_->name() +
                      "' (see the log above)");
  // Unmasked: rows for every token of the last llama_decode call, whatever batch.logits says.
  llama_set_embeddings_nextn(ctx_.get(), true, false);
  longest_record_ = 0;
}

void Backbone::release_compute_memory() {
  make_context(params_.parallel);
}

SequenceMemory Backbone::measure_sequence_memory() {
  // The context of one sequence holds one sequence's KV cells and recurrent states: its bytes in
  // llama.cpp's buffers are what each sequence of a larger context holds (the memory plan counts
  // the same buffers). A record of up to 16 tokens (one batch: at most chunk_tokens) on sequence
  // 0 gives the recurrent part (a partial state) and what a snapshot takes per token.
  std::uint64_t held = 0;
  for (const auto& [buft, bytes] : llama_get_memory_breakdown(ctx_.get())) held += bytes.context;
  const int kTokens = std::min(kBatchRowAlignment, params_.chunk_tokens);
  BatchStorage storage;
  storage.tokens.assign(kTokens, 0);
  storage.pos.resize(kTokens);
  std::iota(storage.pos.begin(), storage.pos.end(), 0);
  storage.seq.assign(kTokens, 0);
  clear_sequence(0);
  if (llama_decode(ctx_.get(), storage.view(false)) != 0) {
    clear_sequence(0);
    throw model_error("cannot run a " + std::to_string(kTokens) + "-token prefill on '" +
                      weights_->name() + "'");
  }
  const std::size_t full = llama_state_seq_get_size_ext(ctx_.get(), 0, LLAMA_STATE_SEQ_FLAGS_NONE);
  const std::size_t recurrent =
      llama_state_seq_get_size_ext(ctx_.get(), 0, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
  clear_sequence(0);
  SequenceMemory m;
  m.recurrent_bytes = recurrent;
  m.snapshot_bytes_per_token = full > recurrent ? (full - recurrent + kTokens - 1) / kTokens : 0;
  const auto context = static_cast<std::uint64_t>(params_.context_size);
  // Rounded up: per_sequence is at least what the buffers hold, within a byte a token.
  m.kv_bytes_per_token =
      held > recurrent ? (held - recurrent + context - 1) / context : m.snapshot_bytes_per_token;
  m.per_sequence = m.kv_bytes_per_token * context + m.recurrent_bytes;
  return m;
}

int Backbone::n_vocab() const noexcept {
  return llama_vocab_n_tokens(vocab());
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

}  // namespace

void throw_cancelled(int at_token) {
  throw DecisionCancelled("the client closed the connection; the decision was cancelled at token " +
                          std::to_string(at_token));
}

Prefill Backbone::start(std::span<const std::int32_t> ids, std::span<const RopePosition> positions,
                        std::span<const EmbeddingSpan> embeddings, const PrefillOptions& reuse,
                        const Cancelled& cancelled, int seq) {
  const int total = static_cast<int>(ids.size());
  check_sequence(seq);
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
  if (!embeddings.empty() && !weights_->mrope()) {
    bad_prefill("embedding inputs need an M-RoPE backbone");
  }
  const int resumed = reuse.resume_checkpoint != nullptr ? reuse.resume_checkpoint->tokens
                      : reuse.resume != nullptr          ? reuse.resume->tokens
                                                         : 0;
  for (const EmbeddingSpan& s : embeddings) {
    if (s.first + s.n_tokens <= resumed && s.rows.empty()) continue;  // inside the resumed part
    if (s.rows.size() != static_cast<std::size_t>(s.n_tokens) * n_embd()) {
      bad_prefill("an embedding span of " + std::to_string(s.n_tokens) + " tokens has " +
                  std::to_string(s.rows.size()) + " values (n_embd " + std::to_string(n_embd()) +
                  ")");
    }
  }
  Prefill p;
  p.batches_ = prefill_batches(total, embeddings, params_.chunk_tokens, reuse.cuts);
  auto is_boundary = [&](int at) {
    return at == total || std::any_of(p.batches_.begin(), p.batches_.end(),
                                      [at](const PrefillBatch& b) { return b.start == at; });
  };
  const bool bad_checkpoint =
      reuse.resume_checkpoint != nullptr &&
      (reuse.resume == nullptr || !reuse.resume_checkpoint->partial || reuse.resume->partial ||
       reuse.resume_checkpoint->tokens >= reuse.resume->tokens);
  if ((reuse.resume != nullptr || reuse.resume_checkpoint != nullptr) &&
      (bad_checkpoint || resumed <= 0 || resumed >= total || !is_boundary(resumed) ||
       reuse.resume_rows.size() != static_cast<std::size_t>(resumed) * n_embd())) {
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
  p.ids_ = ids;
  p.positions_ = positions;
  p.embeddings_ = embeddings;
  p.reuse_ = reuse;
  p.cancelled_ = cancelled;
  p.seq_ = seq;

  // Fresh KV and recurrent state: nothing of the previous record may leak into this one.
  clear_sequence(seq);
  longest_record_ = std::max(longest_record_, total);

  p.out_.rows = total;
  p.out_.n_embd = n_embd();
  p.out_.data.resize(static_cast<std::size_t>(total) * n_embd());
  if (reuse.resume != nullptr) {
    restore(seq, reuse, positions);
    std::copy(reuse.resume_rows.begin(), reuse.resume_rows.end(), p.out_.data.begin());
  }
  p.at_ = resumed;
  p.last_progress_ = std::chrono::steady_clock::now();
  while (p.next_batch_ < p.batches_.size() && p.batches_[p.next_batch_].start < resumed) {
    ++p.next_batch_;
  }
  return p;
}

void Backbone::suspend(Prefill& p) {
  if (p.done() || p.suspended_) bad_prefill("suspend() of a prefill that is done or suspended");
  p.suspended_memory_ = take_snapshot(p.seq_, p.at_, false);
  clear_sequence(p.seq_);
  p.suspended_ = true;
}

void Backbone::resume(Prefill& p, int seq) {
  if (!p.suspended_) bad_prefill("resume() of a prefill that is not suspended");
  check_sequence(seq);
  clear_sequence(seq);
  if (!set_memory(seq, p.suspended_memory_, false)) {
    clear_sequence(seq);
    bad_prefill("llama.cpp did not take back a suspended prefill's memory");
  }
  p.seq_ = seq;
  p.suspended_ = false;
  p.suspended_memory_ = MemorySnapshot{};
}

int Backbone::next_piece(const Prefill& p, int limit) {
  const PrefillBatch& pb = p.batches_[p.next_batch_];
  const int left = pb.start + pb.n_tokens - p.at_;
  if (left <= limit) return left;
  // Never leave a 1-token tail (llama.cpp's single-token kernels round differently).
  if (left == limit + 1) return limit > kBatchRowAlignment ? limit - kBatchRowAlignment : left;
  return limit;
}

void Backbone::step(std::span<Prefill* const> prefills, int piece_tokens) {
  const bool whole = piece_tokens == kWholeBatches;
  if (!whole &&
      (params_.flash_attention || piece_tokens <= 0 || piece_tokens % kBatchRowAlignment != 0)) {
    bad_prefill("step() of pieces of " + std::to_string(piece_tokens) +
                " tokens (whole layout batches, or a multiple of 16 without flash attention)");
  }
  std::vector<Prefill*> live;
  for (Prefill* p : prefills) {
    if (p->done()) continue;
    if (p->suspended_) bad_prefill("step() of a suspended prefill");
    if (p->cancelled_ && abort_if_cancelled(&p->cancelled_)) {
      p->cancelled_at_ = p->at_;
      clear_sequence(p->seq_);
      continue;
    }
    live.push_back(p);
  }
  if (live.empty()) return;
  // Pieces of one length (a multiple of the row alignment) and kind share a llama_decode, in
  // sequence order; any other piece is decoded alone.
  std::map<std::pair<int, bool>, std::vector<Prefill*>> groups;
  std::vector<std::pair<Prefill*, int>> alone;
  for (Prefill* p : live) {
    const int piece = next_piece(*p, piece_tokens);
    if (piece % kBatchRowAlignment != 0) {
      alone.emplace_back(p, piece);
    } else {
      groups[{piece, p->batches_[p->next_batch_].embeddings}].push_back(p);
    }
  }
  // A group of one can be stopped during its piece: the abort callback asks its own `cancelled`.
  auto decode_one = [this](Prefill* p, int piece) {
    try {
      decode_pieces(std::span<Prefill* const>(&p, 1), piece, p->cancelled_);
    } catch (const DecisionCancelled&) {
      p->cancelled_at_ = p->at_;
      clear_sequence(p->seq_);
    }
  };
  for (auto& [key, group] : groups) {
    if (group.size() == 1) {
      decode_one(group.front(), key.first);
      continue;
    }
    std::sort(group.begin(), group.end(),
              [](const Prefill* a, const Prefill* b) { return a->seq_ < b->seq_; });
    // At most a chunk of tokens per llama_decode (n_batch = n_ubatch = chunk_tokens).
    const std::size_t most =
        static_cast<std::size_t>(std::max(1, params_.chunk_tokens / key.first));
    for (std::size_t at = 0; at < group.size(); at += most) {
      decode_pieces(std::span<Prefill* const>(group).subspan(at, std::min(most, group.size() - at)),
                    key.first, {});
    }
  }
  for (auto& [p, piece] : alone) decode_one(p, piece);
}

void Backbone::decode_pieces(std::span<Prefill* const> group, int n, const Cancelled& cancelled) {
  const bool embeddings = group.front()->batches_[group.front()->next_batch_].embeddings;
  const auto rows_each = static_cast<std::size_t>(n);
  const std::size_t total = rows_each * group.size();
  BatchStorage storage;
  storage.seq.reserve(total);
  if (embeddings) {
    storage.embd.reserve(total * n_embd());
    storage.pos.resize(4 * total);
  } else {
    storage.tokens.reserve(total);
  }
  for (std::size_t g = 0; g < group.size(); ++g) {
    Prefill& p = *group[g];
    const PrefillBatch& pb = p.batches_[p.next_batch_];
    if (pb.embeddings != embeddings || p.at_ + n > pb.start + pb.n_tokens) {
      bad_prefill("a piece of " + std::to_string(n) + " tokens does not fit its batch");
    }
    const PrefillBatch piece{p.at_, n, embeddings};
    const std::vector<std::int32_t> pos = batch_positions(piece, p.positions_);
    storage.seq.insert(storage.seq.end(), rows_each, p.seq_);
    if (embeddings) {
      while (p.embeddings_[p.span_index_].first + p.embeddings_[p.span_index_].n_tokens <= p.at_) {
        ++p.span_index_;
      }
      const EmbeddingSpan& s = p.embeddings_[p.span_index_];
      const float* rows = s.rows.data() + static_cast<std::size_t>(p.at_ - s.first) * n_embd();
      storage.embd.insert(storage.embd.end(), rows, rows + rows_each * n_embd());
      // Section-major over the whole batch: [t...][h...][w...][z...].
      for (std::size_t sec = 0; sec < 4; ++sec) {
        std::copy_n(pos.begin() + static_cast<std::ptrdiff_t>(sec * rows_each), rows_each,
                    storage.pos.begin() + static_cast<std::ptrdiff_t>(sec * total + g * rows_each));
      }
    } else {
      storage.tokens.insert(storage.tokens.end(), p.ids_.begin() + p.at_,
                            p.ids_.begin() + p.at_ + n);
      storage.pos.insert(storage.pos.end(), pos.begin(), pos.end());
    }
  }
  const int first = group.front()->at_;
  std::optional<AbortCallbackScope> abort_scope;
  if (cancelled) abort_scope.emplace(ctx_.get(), cancelled);
  const int rc = llama_decode(ctx_.get(), storage.view(embeddings));
  abort_scope.reset();
  if (rc == 2 && cancelled) throw_cancelled(first);  // 2: aborted by the callback
  if (rc != 0) {
    throw Error(ErrorKind::internal, "backbone_failed",
                "llama_decode failed with code " + std::to_string(rc) + " at token " +
                    std::to_string(first));
  }
  const float* rows = llama_get_embeddings_nextn(ctx_.get());
  if (rows == nullptr) {
    throw Error(ErrorKind::internal, "backbone_failed", "backbone returned no hidden states");
  }
  // The rows come in ubatch order: sequence by sequence, in the batch's (increasing) order.
  for (std::size_t g = 0; g < group.size(); ++g) {
    Prefill& p = *group[g];
    std::memcpy(p.out_.data.data() + static_cast<std::size_t>(p.at_) * n_embd(),
                rows + g * rows_each * n_embd(), sizeof(float) * rows_each * n_embd());
    p.at_ += n;
    const PrefillBatch& pb = p.batches_[p.next_batch_];
    if (p.at_ == pb.start + pb.n_tokens) ++p.next_batch_;
    const PrefillOptions& reuse = p.reuse_;
    if (p.next_checkpoint_ < reuse.checkpoint_at.size() &&
        reuse.checkpoint_at[p.next_checkpoint_] == p.at_) {
      p.out_.checkpoints.push_back(take_snapshot(p.seq_, p.at_, true));
      ++p.next_checkpoint_;
    }
    if (p.next_snapshot_ < reuse.snapshot_at.size() &&
        reuse.snapshot_at[p.next_snapshot_] == p.at_) {
      p.out_.snapshots.push_back(take_snapshot(p.seq_, p.at_, false));
      ++p.next_snapshot_;
    }
    // A progress snapshot only at a layout batch boundary (where a later prefill of the same
    // record may resume), never after the last batch.
    const std::uint64_t progress_bytes =
        sequence_memory_.snapshot_bytes_per_token * static_cast<std::uint64_t>(p.at_) +
        sequence_memory_.recurrent_bytes;
    if (reuse.progress_every.count() > 0 && p.at_ == pb.start + pb.n_tokens &&
        p.next_batch_ < p.batches_.size() &&
        (reuse.progress_max_bytes == 0 || progress_bytes <= reuse.progress_max_bytes) &&
        std::chrono::steady_clock::now() - p.last_progress_ >= reuse.progress_every) {
      p.out_.progress = take_snapshot(p.seq_, p.at_, false);
      p.last_progress_ = std::chrono::steady_clock::now();
    }
  }
}

void Backbone::check_sequence(int seq) const {
  if (seq < 0 || seq >= params_.parallel) {
    bad_prefill("sequence " + std::to_string(seq) + " of a context of " +
                std::to_string(params_.parallel));
  }
}

void Backbone::clear_sequence(int seq) {
  if (llama_memory_seq_rm(llama_get_memory(ctx_.get()), seq, -1, -1)) return;
  if (params_.parallel > 1) bad_prefill("llama.cpp did not clear sequence " + std::to_string(seq));
  llama_memory_clear(llama_get_memory(ctx_.get()), true);
}

MemorySnapshot Backbone::take_snapshot(int seq, int tokens, bool partial) {
  const llama_state_seq_flags flags =
      partial ? LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY : LLAMA_STATE_SEQ_FLAGS_NONE;
  MemorySnapshot m;
  m.tokens = tokens;
  m.partial = partial;
  m.data.resize(llama_state_seq_get_size_ext(ctx_.get(), seq, flags));
  if (llama_state_seq_get_data_ext(ctx_.get(), m.data.data(), m.data.size(), seq, flags) !=
      m.data.size()) {
    bad_prefill("llama.cpp wrote a short memory snapshot");
  }
  return m;
}

bool Backbone::set_memory(int seq, const MemorySnapshot& m, bool partial) {
  const llama_state_seq_flags flags =
      partial ? LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY : LLAMA_STATE_SEQ_FLAGS_NONE;
  return llama_state_seq_set_data_ext(ctx_.get(), m.data.data(), m.data.size(), seq, flags) ==
         m.data.size();
}

int Backbone::restore(int seq, const PrefillOptions& reuse,
                      std::span<const RopePosition> positions) {
  auto fail = [&](const std::string& what) {
    clear_sequence(seq);
    bad_prefill(what);
  };
  const MemorySnapshot& full = *reuse.resume;
  if (!set_memory(seq, full, false)) {
    fail("llama.cpp did not take back a memory snapshot of " + std::to_string(full.tokens) +
         " tokens");
  }
  if (reuse.resume_checkpoint == nullptr) return full.tokens;
  // The recurrent states at c first (the recurrent memory cannot be cut back, llama-probes.md
  // section 3), then the attention KV from token c's position on.
  const MemorySnapshot& at = *reuse.resume_checkpoint;
  if (!set_memory(seq, at, true)) {
    fail("llama.cpp did not take back a checkpoint of " + std::to_string(at.tokens) + " tokens");
  }
  const llama_pos from =
      positions.empty() ? at.tokens : positions[static_cast<std::size_t>(at.tokens)].t;
  if (!llama_memory_seq_rm(llama_get_memory(ctx_.get()), seq, from, -1)) {
    fail("llama.cpp did not cut the memory back to " + std::to_string(at.tokens) + " tokens");
  }
  return at.tokens;
}

}  // namespace clef::backbone
