#pragma once
// The joint schema head's forward pass as one ggml graph (decision contract, section 5; reference
// JointSchemaHead.forward; tests/data/oracle/head/README.md, "The forward pass, precisely"): the
// one definition that serving (JointSchemaHead) and training (tune::HeadTrainer) both build, so a
// tuned head and a served head cannot drift apart.

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "head/head_config.hpp"
#include "head/head_model.hpp"
#include "head/head_question.hpp"
#include "util/error.hpp"

namespace clef::head {

/// clef::Error (internal) "joint schema head input: <message>".
Error head_input_error(const std::string& message);

/// Host-side index bookkeeping for one record (no model math): which hidden rows each span
/// averages, which question each option belongs to, and the summary softmax's mask.
struct PackedRecord {
  std::int64_t n_questions = 0;
  std::int64_t n_options = 0;
  std::vector<std::int32_t> span_tokens;      ///< [L]: rows of all spans (questions, then options)
  std::vector<float> span_select;             ///< [n_spans, L]: 1 where row l belongs to span
  std::vector<float> span_lengths;            ///< [n_spans]: e - s
  std::vector<std::int32_t> option_question;  ///< [N]: question index of each option
  std::vector<std::int32_t> types;            ///< [n_questions]
  std::vector<float> summary_mask;            ///< [n_questions, N]: 0 own option, -inf otherwise
};

/// Packs `questions` of a record of `n_tokens` rows. Throws head_input_error for no questions, a
/// question without options, a type outside 0..2 or a span empty or outside [0, n_tokens).
PackedRecord pack_record(std::int64_t n_tokens, std::span<const HeadQuestion> questions);

/// Several records in one graph (training's batches): their rows concatenated (record 0's
/// tokens, then record 1's...), their questions numbered in record order, options likewise; the
/// spans of all questions first, then those of all options, as one record's are.
struct PackedBatch {
  std::vector<std::int64_t> token_offsets;  ///< [records + 1]: record r has rows [o_r, o_r+1)
  /// All records' spans and index tensors, as one record's (PackedRecord), in batch numbering.
  PackedRecord all;
  std::vector<std::int32_t> last_tokens;      ///< [records]: each record's last row
  std::vector<std::int32_t> question_record;  ///< [nq]: the record of each question
  /// Attention masks keeping each record to its own rows (0 own, -inf other records'):
  std::vector<float> option_token_mask;    ///< [N, T]: the evidence layers' options
  std::vector<float> question_token_mask;  ///< [nq, T]: the decoder's cross-attention
  std::vector<float> question_mask;        ///< [nq, nq]: the decoder's self-attention

  std::size_t n_records() const { return last_tokens.size(); }
  std::int64_t n_tokens() const { return token_offsets.back(); }
};

/// One record of a batch: its row count and questions (spans within its own rows).
struct BatchRecord {
  std::int64_t n_tokens = 0;
  std::span<const HeadQuestion> questions;
};

/// Packs `records` for one graph. Throws head_input_error as pack_record, and for no records.
PackedBatch pack_batch(std::span<const BatchRecord> records);

/// Graph inputs (set after allocation) and the output.
struct GraphIo {
  ggml_tensor* hidden = nullptr;           ///< [H, T]
  ggml_tensor* lexical = nullptr;          ///< [H, N]
  ggml_tensor* span_tokens = nullptr;      ///< I32 [L]
  ggml_tensor* span_select = nullptr;      ///< [L, n_spans]
  ggml_tensor* span_lengths = nullptr;     ///< [1, n_spans]
  ggml_tensor* option_question = nullptr;  ///< I32 [N]
  ggml_tensor* types = nullptr;            ///< I32 [n_questions]
  ggml_tensor* summary_mask = nullptr;     ///< [N, n_questions]
  // A batch of more than one record only:
  ggml_tensor* last_tokens = nullptr;          ///< I32 [records]
  ggml_tensor* question_record = nullptr;      ///< I32 [nq]
  ggml_tensor* option_token_mask = nullptr;    ///< [T, N]
  ggml_tensor* question_token_mask = nullptr;  ///< [T, nq]
  ggml_tensor* question_mask = nullptr;        ///< [nq, nq]
  ggml_tensor* logits = nullptr;               ///< [1, N] output
};

/// Nodes a graph of build_forward may hold for config `c` (the graph size to reserve).
std::size_t forward_graph_size(const HeadConfig& c);

/// Adds the forward pass of a record of `n_tokens` packed as `p` to `gf` over the head tensors `w`
/// (README steps 1-14, batch size 1). Returns the graph's inputs (to set once allocated, with
/// set_inputs) and its logits, [1, N] in record order (questions in order, then options).
GraphIo build_forward(ggml_context* ctx, ggml_cgraph* gf, const HeadTensors& w, const HeadConfig& c,
                      std::int64_t n_tokens, const PackedRecord& p);

/// What a forward graph is for. `serving`: README's steps as written. `training`: the hidden
/// states' LayerNorm folded into the memory projection (folded_linear) and applied to the
/// gathered rows alone, the same logits up to rounding, so that the backward runs no product
/// over every token's H values for the norm (a third less work for the memory projection's
/// backward, docs/tuning.md "One step").
enum class Pass { serving, training };

/// The forward pass of every record of `b` in one graph: each record's logits as its own forward
/// gives them (up to the rounding of products over the batch), [1, N] in the batch's order. The
/// projections run once over all the records' rows or options, so that the backward's
/// weight-sized work (each weight's gradient product and transposed copy) is done once per batch,
/// not per record; attention keeps each record to its own rows and questions with masks (a masked
/// score weighs exactly 0). One record: exactly build_forward's graph.
GraphIo build_forward(ggml_context* ctx, ggml_cgraph* gf, const HeadTensors& w, const HeadConfig& c,
                      const PackedBatch& b, Pass pass = Pass::serving);

/// Uploads a record's inputs into an allocated graph: `hidden` [n_tokens, H] and `lexical` [N, H]
/// row-major, and the index tensors of `p`.
void set_inputs(const GraphIo& io, const PackedRecord& p, std::span<const float> hidden,
                std::span<const float> lexical);

/// Uploads a batch's inputs: hidden[r] [T_r, H] per record and `lexical` [N, H] (the records'
/// options in order) row-major, and the index tensors and masks of `b`. Throws head_input_error
/// when `hidden` does not hold one entry per record.
void set_inputs(const GraphIo& io, const PackedBatch& b,
                std::span<const std::span<const float>> hidden, std::span<const float> lexical);

/// A record of kEveryOpTokens tokens with one question of each type: a graph of it holds every op
/// the head's graphs hold (what a backend is asked whether it runs them).
inline constexpr std::int64_t kEveryOpTokens = 16;
std::vector<HeadQuestion> every_op_questions();

/// Adds to `out` the op of every node of `gf` that `backend` cannot run (ggml_op_desc names, each
/// once).
void add_unsupported_ops(ggml_backend_t backend, const ggml_cgraph* gf,
                         std::vector<std::string>& out);

}  // namespace clef::head
