#pragma once
// The backbone: a qwen35 GGUF loaded through libllama, run as ONE prefill per record, returning
// the final-norm hidden state of every position (contract section 4) without computing LM-head
// logits for any token.

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "backbone/backbone_params.hpp"
#include "backbone/backbone_weights.hpp"
#include "backbone/llama_handles.hpp"
#include "backbone/memory_snapshot.hpp"
#include "backbone/prefill_layout.hpp"

namespace clef::backbone {

/// Throws clef::DecisionCancelled for a prefill its client stopped at token `at_token`
/// (Prefill::cancelled_at): the one wording of that outcome.
[[noreturn]] void throw_cancelled(int at_token);

/// Asked during a prefill: true stops it (the client has gone). Empty: never.
using Cancelled = std::function<bool()>;

/// How a prefill shares work with others (the state cache). The layout
/// (prefill_batches) is cut at `cuts` whether or not a snapshot is resumed, so a record's hidden
/// states are the same bytes cold and warm.
struct PrefillOptions {
  /// Extra layout boundaries, sorted, inside (0, total).
  std::span<const int> cuts;
  /// Start from this memory instead of token 0 (its `tokens` must be a batch boundary of the
  /// layout); null: a cold prefill.
  const MemorySnapshot* resume = nullptr;
  /// Optional, with `resume`: a partial checkpoint of the same earlier record at fewer tokens c
  /// (a text token of this layout's boundaries): `resume` is set, then this checkpoint's recurrent
  /// states, then the attention KV of positions from token c on is dropped, and the prefill
  /// resumes at c.
  const MemorySnapshot* resume_checkpoint = nullptr;
  /// The hidden rows of the resumed tokens: (resume_checkpoint ? it : resume)->tokens x n_embd.
  std::span<const float> resume_rows;
  /// Take a MemorySnapshot after these many tokens (sorted; each a batch boundary, after the
  /// resumed part) into HiddenStates::snapshots.
  std::span<const int> snapshot_at;
  /// Take a partial MemorySnapshot (recurrent states only) after these many tokens (sorted; each
  /// a batch boundary after the resumed part) into HiddenStates::checkpoints.
  std::span<const int> checkpoint_at;
  /// Progress snapshots: at the first layout batch boundary after this long since the prefill
  /// started or since its last progress snapshot, the memory is snapshotted into
  /// HiddenStates::progress (replacing the previous one), so a prefill cancelled later leaves
  /// a point to resume from (a client that timed out retries). Zero: none. They change nothing
  /// that is decoded.
  std::chrono::milliseconds progress_every{0};
  /// The largest progress snapshot worth taking, bytes (sequence_memory(): the KV of the tokens
  /// so far plus the recurrent states); past it none is taken. 0: no bound.
  std::uint64_t progress_max_bytes = 0;
};

/// What one sequence of the context holds at most (Backbone::sequence_memory): the attention KV
/// of a whole context plus the Gated DeltaNet states, measured on the loaded model in llama.cpp's
/// own accounting of its buffers (llama_get_memory_breakdown: the memory plan's "sequences" is
/// parallel x per_sequence).
struct SequenceMemory {
  std::uint64_t kv_bytes_per_token = 0;  ///< attention KV of one token, all attention layers
  std::uint64_t recurrent_bytes = 0;     ///< conv + recurrent states of one sequence
  std::uint64_t per_sequence = 0;        ///< kv_bytes_per_token * context_size + recurrent_bytes
  /// A snapshot's bytes per token of KV (llama_state_seq_get_size: the KV and the cells'
  /// metadata); a snapshot of t tokens is about this x t + recurrent_bytes.
  std::uint64_t snapshot_bytes_per_token = 0;
};

/// `bytes` as "12.3 MiB".
std::string mebibytes(std::uint64_t bytes);

/// "212.3 MiB per sequence (12322 B of KV per token of the context, 20.1 MiB of recurrent state),
/// 849.2 MiB in all" for `parallel` sequences of `memory`.
std::string describe_sequence_memory(const SequenceMemory& memory, int parallel);

/// Throws clef::Error (invalid_request naming "parallel") when `parallel` sequences of `memory`
/// need more than `room` bytes (0: unknown, nothing refused); the message says what one sequence
/// holds and what `device` has.
void check_parallel_fits(const SequenceMemory& memory, int parallel, std::uint64_t room,
                         const std::string& device);

/// Throws clef::Error (invalid_request naming chunk_tokens) when a context of params.chunk_tokens
/// batches would need ggml scheduler metadata over half of physical memory (ggml aborts the
/// process when it cannot allocate it). Backbone and measure_memory check it before any context.
void check_scheduler_metadata(const BackboneParams& params);

/// Throws clef::Error (invalid_request naming "parallel", or "context_size" when one sequence
/// alone is too large) when a context of `sequences` x params.context_size cells would put a KV
/// tensor on the GPU that the device cannot hold in one buffer: one attention layer's K (or V)
/// cache is one tensor of key_length x KV heads x context_size x sequences f16 values, and
/// ggml's scheduler aborts the process on a tensor its device does not support (a Vulkan buffer
/// is at most maxBufferSize / maxStorageBufferRange bytes). Asked of the device itself
/// (ggml_backend_dev_supports_op), before any context; the message gives the arithmetic and the
/// most sequences that fit. Nothing is checked on the CPU or with no layer on the GPU.
void check_kv_tensors(const llama_model* model, const BackboneParams& params, int sequences);

/// One record's prefill in progress on one sequence of the backbone's context, made by
/// Backbone::start and advanced by Backbone::step (alone or several records together). It refers to
/// the inputs it was started with (ids, positions, embedding rows, the PrefillOptions and what they
/// point to, `cancelled`): the caller keeps them alive until it is done. Movable, not copyable.
class Prefill {
 public:
  /// Every token is prefilled (or the prefill was cancelled): nothing is left to decode.
  bool done() const noexcept { return cancelled_at_ >= 0 || next_batch_ >= batches_.size(); }
  /// Stopped because `cancelled` said so (at token cancelled_at()); its memory is cleared.
  bool cancelled() const noexcept { return cancelled_at_ >= 0; }
  int cancelled_at() const noexcept { return cancelled_at_; }
  /// The context sequence (llama_seq_id) holding its memory.
  int sequence() const noexcept { return seq_; }
  /// Its memory is out of the context (Backbone::suspend) until Backbone::resume sets it back.
  bool suspended() const noexcept { return suspended_; }
  /// Tokens whose hidden rows are known (resumed ones included).
  int prefilled() const noexcept { return at_; }
  int total() const noexcept { return static_cast<int>(ids_.size()); }
  /// The hidden states once done() (moved out). Of a cancelled prefill: the rows of its first
  /// prefilled() tokens, the snapshots it took, and its latest progress snapshot.
  HiddenStates take() { return std::move(out_); }

 private:
  friend class Backbone;
  Prefill() = default;

  std::span<const std::int32_t> ids_;
  std::span<const RopePosition> positions_;
  std::span<const EmbeddingSpan> embeddings_;
  PrefillOptions reuse_;
  Cancelled cancelled_;
  int seq_ = 0;
  std::vector<PrefillBatch> batches_;  ///< the record's layout (prefill_batches)
  std::size_t next_batch_ = 0;         ///< the layout batch the next piece comes from
  int at_ = 0;                         ///< next token to decode
  std::size_t span_index_ = 0;
  std::size_t next_snapshot_ = 0;
  std::size_t next_checkpoint_ = 0;
  int cancelled_at_ = -1;
  bool suspended_ = false;
  MemorySnapshot suspended_memory_;                      ///< what suspend() took out of the context
  std::chrono::steady_clock::time_point last_progress_;  ///< start, or the last progress snapshot
  HiddenStates out_;
};

/// A llama context on a backbone's weights (BackboneWeights, shared: several contexts, and the
/// tokenizer's users, may hold the same weights). Not thread-safe: one prefill at a time (the
/// server's decision runtime serializes calls).
class Backbone {
 public:
  /// A context of `params` on `weights` (which must have been loaded with params' device, GPU
  /// layers and repacking: BackboneWeights::check_context_params). Throws clef::Error
  /// (invalid_request) for bad params, model_error when llama.cpp cannot make the context.
  Backbone(std::shared_ptr<const BackboneWeights> weights, const BackboneParams& params);

  /// Loads `gguf_path` (mmap: BackboneWeights::load) and creates the context. `kv_overrides`
  /// (terminated by an entry with an empty key, or empty) replace GGUF metadata at load, e.g. the
  /// tokenizer's pre-tokenizer. Throws clef::Error (model_error) when the file cannot be loaded or
  /// is not a usable qwen35 backbone (wrong arch), invalid_request for bad params.
  Backbone(const std::string& gguf_path, const BackboneParams& params,
           std::span<const llama_model_kv_override> kv_overrides = {});

  /// Takes an already loaded qwen35 model (e.g. a layout B/C file loaded by
  /// artifact::load_backbone, loaded with `params`) and creates the context; `name` is used in
  /// messages.
  /// Throws clef::Error like the file constructor.
  Backbone(LlamaModelPtr model, const BackboneParams& params, const std::string& name);

  /// The llama_context_params of a context of `sequences` sequences of `params` (one KV stream
  /// of params.context_size cells each, chunk_tokens batches, one output row per sequence).
  static llama_context_params context_params(const BackboneParams& params, int sequences);

  int n_embd() const noexcept { return weights_->n_embd(); }
  /// Repeating layers (llama_model_n_layer): what gpu_layers counts.
  int n_layer() const noexcept;
  int n_vocab() const noexcept;
  int context_size() const noexcept { return params_.context_size; }
  const BackboneParams& params() const noexcept { return params_; }
  const llama_model* model() const noexcept { return weights_->model(); }
  llama_model* model() noexcept { return weights_->model(); }
  const llama_vocab* vocab() const noexcept { return weights_->vocab(); }
  /// The vocabulary, sharing ownership of the weights: it stays valid after the backbone (and its
  /// context) are gone, for a tokenizer that outlives them (runtime::EnginePreparer).
  std::shared_ptr<const llama_vocab> shared_vocab() const { return weights_->shared_vocab(); }
  /// The weights it runs on, to share with another context.
  const std::shared_ptr<const BackboneWeights>& weights() const noexcept { return weights_; }

  /// Starts a record's prefill on context sequence `seq` (0 <= seq < params().parallel), from a
  /// fresh state: that sequence's memory is cleared (only it: the others keep theirs) and
  /// `reuse.resume` set into it. Decodes nothing yet; step() decodes prefill_batches(T,
  /// embeddings, chunk, reuse.cuts) with batch_positions() and the prefill gives [T, n_embd].
  /// The tokens of each `embeddings` span take its rows instead of their ids' embeddings (the ids
  /// there are ignored); token i has M-RoPE position `positions[i]` (all T of them; empty: plain
  /// 0..T-1). With reuse.resume only the batches after it are decoded (embedding spans that end
  /// inside the resumed part may have empty rows); a snapshot is taken at each
  /// reuse.snapshot_at point. `cancelled` (optional) is asked before each piece and, through
  /// llama.cpp's abort callback, during a piece's compute (CPU backends check it between graph
  /// nodes); once it says true the prefill stops (Prefill::cancelled). It must be cheap and must
  /// not throw (a throw counts as false). Throws clef::Error: invalid_request if ids is empty,
  /// 413 context_length_exceeded if longer than context_size; internal for spans or positions
  /// that do not fit the record, a rows size other than n_tokens * n_embd, images on a backbone
  /// without M-RoPE, a resume or snapshot point that is not a batch boundary, resumed rows of the
  /// wrong size, a snapshot llama.cpp does not take back, or a sequence out of range.
  Prefill start(std::span<const std::int32_t> ids, std::span<const RopePosition> positions,
                std::span<const EmbeddingSpan> embeddings, const PrefillOptions& reuse,
                const Cancelled& cancelled, int seq);

  /// One step of continuous batching: every prefill not done() decodes its next piece, pieces of
  /// the same length going through ONE llama_decode as consecutive sequences (at most
  /// chunk_tokens a call). A piece is at most `piece_tokens` tokens of its layout batch (the
  /// step's budget, which the caller sets: runtime::plan_step through shared_piece()), never
  /// leaving a 1-token tail; a piece of another length (a layout batch's tail) is decoded on its
  /// own. `piece_tokens` is kWholeBatches (whole layout batches; always with flash attention, whose
  /// kernels depend on the layout) or a positive multiple of kBatchRowAlignment, so every
  /// boundary stays where the record alone may have one. So each record's rows are the bytes it
  /// gets alone: llama.cpp splits a batch of several sequences into ubatches of consecutive
  /// sequence ids and equal lengths (llama-batch.cpp split_equal), each sequence keeps its own KV
  /// stream (kv_unified off) and recurrent cell, and every row of an aligned piece takes the
  /// 16-row matrix path it takes alone. A prefill whose `cancelled` says true is stopped before
  /// its piece, or, when its piece goes through llama_decode on its own, during it (llama.cpp's
  /// abort callback): done(), cancelled(), its memory cleared; the others go on. Throws
  /// clef::Error (internal) when llama_decode fails (every prefill of the step is then
  /// unusable), a prefill is suspended(), or `piece_tokens` is none of the above.
  void step(std::span<Prefill* const> prefills, int piece_tokens);

  /// Takes `prefill`'s memory out of its sequence (a full snapshot) and clears the sequence, so
  /// another record may use it; the prefill is suspended() until resume(). Bytes unchanged: the
  /// same pieces are decoded later from the same memory (llama-probes.md section 3). Throws
  /// clef::Error (internal) for a prefill that is done() or already suspended.
  void suspend(Prefill& prefill);

  /// Sets a suspended prefill's memory back into sequence `seq` (cleared first; any free one, its
  /// own or another) and goes on from there. Throws clef::Error (internal) for a prefill that is
  /// not suspended, a sequence out of range, or a memory llama.cpp does not take back.
  void resume(Prefill& prefill, int seq);

  /// What one sequence of the context holds (measured when the backbone was made).
  const SequenceMemory& sequence_memory() const noexcept { return sequence_memory_; }

  /// The most tokens of a record prefilled since the context was made (0: none yet).
  int longest_record() const noexcept { return longest_record_; }

  /// Frees the llama context (KV cache, recurrent state and the compute buffers, whose pages a
  /// long record touched and kept resident) and makes a fresh one with the same parameters, so
  /// the process gives that memory back. Later prefills give bit-identical hidden states (every
  /// prefill starts from a cleared state anyway). Costs one context creation (graph reserve).
  /// Throws clef::Error (model_error) if the new context cannot be made.
  void release_compute_memory();

 private:
  /// Makes the context (one sequence to measure sequence_memory_, then params().parallel).
  void init();
  /// Makes the llama context with `sequences` sequences (n_seq_max).
  void make_context(int sequences);
  /// Measures sequence_memory_ on the current (one-sequence) context.
  SequenceMemory measure_sequence_memory();
  /// The memory of sequence `seq` now, after its first `tokens` tokens (recurrent states only
  /// when `partial`).
  MemorySnapshot take_snapshot(int seq, int tokens, bool partial);
  /// Sets sequence `seq`'s memory from `m` as a full snapshot, or as recurrent states only when
  /// `partial` (llama.cpp refuses a snapshot of the other kind); false when it does not take it.
  bool set_memory(int seq, const MemorySnapshot& m, bool partial);
  /// Sets sequence `seq`'s memory from `reuse.resume` (and `reuse.resume_checkpoint`); returns
  /// the resumed token count. Throws clef::Error (internal) when llama.cpp does not take it.
  int restore(int seq, const PrefillOptions& reuse, std::span<const RopePosition> positions);
  /// Throws clef::Error (internal) for a sequence outside 0 .. params().parallel - 1.
  void check_sequence(int seq) const;
  /// Clears one sequence's KV and recurrent state.
  void clear_sequence(int seq);
  /// The length of `p`'s next piece when a piece may have at most `limit` tokens (a multiple of
  /// kBatchRowAlignment), and never a 1-token tail.
  static int next_piece(const Prefill& p, int limit);
  /// Decodes `n` tokens of each of `group` (sorted by sequence, all of one kind: ids or
  /// embedding rows) in one llama_decode, copies their rows, takes their snapshots and moves
  /// them on. `cancelled` (may be empty) is the abort callback for this call.
  void decode_pieces(std::span<Prefill* const> group, int n, const Cancelled& cancelled);

  BackboneParams params_;
  std::shared_ptr<const BackboneWeights> weights_;  ///< shared with other contexts, tokenizers
  LlamaContextPtr ctx_;
  int longest_record_ = 0;
  SequenceMemory sequence_memory_;
};

}  // namespace clef::backbone
