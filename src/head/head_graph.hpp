#pragma once
// The joint schema head's forward pass as one ggml graph (decision contract, section 5; reference
// JointSchemaHead.forward; tests/data/oracle/head/README.md, "The forward pass, precisely"): the
// one definition that serving (JointSchemaHead) and training (tune::HeadTrainer) both build, so a
// tuned head and a served head cannot drift apart.

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
  ggml_tensor* logits = nullptr;           ///< [1, N] output
};

/// Nodes a graph of build_forward may hold for config `c` (the graph size to reserve).
std::size_t forward_graph_size(const HeadConfig& c);

/// Adds the forward pass of a record of `n_tokens` packed as `p` to `gf` over the head tensors `w`
/// (README steps 1-14, batch size 1). Returns the graph's inputs (to set once allocated, with
/// set_inputs) and its logits, [1, N] in record order (questions in order, then options).
GraphIo build_forward(ggml_context* ctx, ggml_cgraph* gf, const HeadTensors& w, const HeadConfig& c,
                      std::int64_t n_tokens, const PackedRecord& p);

/// Uploads a record's inputs into an allocated graph: `hidden` [n_tokens, H] and `lexical` [N, H]
/// row-major, and the index tensors of `p`.
void set_inputs(const GraphIo& io, const PackedRecord& p, std::span<const float> hidden,
                std::span<const float> lexical);

}  // namespace clef::head
