#include "head/joint_schema_head.hpp"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "head/head_graph_ops.hpp"
#include "head/head_model.hpp"
#include "util/error.hpp"

namespace clef::head {

namespace {

Error head_input_error(const std::string& message) {
  return Error(ErrorKind::internal, "internal", "joint schema head input: " + message);
}

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

PackedRecord pack_record(std::int64_t n_tokens, std::span<const HeadQuestion> questions) {
  if (questions.empty()) throw head_input_error("no questions");
  PackedRecord p;
  p.n_questions = static_cast<std::int64_t>(questions.size());
  std::vector<Span> spans;
  for (std::size_t q = 0; q < questions.size(); ++q) {
    const auto& hq = questions[q];
    if (hq.type < 0 || hq.type > 2) {
      throw head_input_error("question " + std::to_string(q) + " has type " +
                             std::to_string(hq.type) + " (expected 0, 1 or 2)");
    }
    if (hq.options.empty())
      throw head_input_error("question " + std::to_string(q) + " has no options");
    p.types.push_back(hq.type);
    spans.push_back(hq.question);
  }
  for (std::size_t q = 0; q < questions.size(); ++q) {
    for (const Span& s : questions[q].options) {
      spans.push_back(s);
      p.option_question.push_back(static_cast<std::int32_t>(q));
    }
  }
  p.n_options = static_cast<std::int64_t>(p.option_question.size());
  for (const Span& s : spans) {
    if (s.start < 0 || s.start >= s.end || s.end > n_tokens) {
      throw head_input_error("span [" + std::to_string(s.start) + ", " + std::to_string(s.end) +
                             ") is empty or outside the " + std::to_string(n_tokens) + " tokens");
    }
    for (std::int64_t t = s.start; t < s.end; ++t)
      p.span_tokens.push_back(static_cast<std::int32_t>(t));
    p.span_lengths.push_back(static_cast<float>(s.end - s.start));
  }
  const std::size_t n_rows = p.span_tokens.size();
  p.span_select.assign(spans.size() * n_rows, 0.0f);
  std::size_t row = 0;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    for (std::int64_t t = spans[k].start; t < spans[k].end; ++t)
      p.span_select[k * n_rows + row++] = 1.0f;
  }
  p.summary_mask.assign(static_cast<std::size_t>(p.n_questions * p.n_options),
                        -std::numeric_limits<float>::infinity());
  for (std::int64_t o = 0; o < p.n_options; ++o) {
    p.summary_mask[static_cast<std::size_t>(p.option_question[o] * p.n_options + o)] = 0.0f;
  }
  return p;
}

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

ggml_tensor* new_input(ggml_context* ctx, ggml_type type, std::int64_t ne0, std::int64_t ne1,
                       const char* name) {
  ggml_tensor* t = ggml_new_tensor_2d(ctx, type, ne0, ne1);
  ggml_set_name(t, name);
  ggml_set_input(t);
  return t;
}

/// The whole forward pass (README "The forward pass, precisely", steps 1-14), batch size 1.
GraphIo build_forward(ggml_context* ctx, ggml_cgraph* gf, const HeadTensors& w, const HeadConfig& c,
                      std::int64_t n_tokens, const PackedRecord& p) {
  const std::int64_t h = c.hidden_size;
  const std::int64_t nq = p.n_questions;
  const std::int64_t n = p.n_options;
  const auto n_rows = static_cast<std::int64_t>(p.span_tokens.size());
  const std::int64_t n_spans = nq + n;
  GraphIo io;
  io.hidden = new_input(ctx, GGML_TYPE_F32, h, n_tokens, "hidden");
  io.lexical = new_input(ctx, GGML_TYPE_F32, h, n, "lexical");
  io.span_tokens = new_input(ctx, GGML_TYPE_I32, n_rows, 1, "span_tokens");
  io.span_select = new_input(ctx, GGML_TYPE_F32, n_rows, n_spans, "span_select");
  io.span_lengths = new_input(ctx, GGML_TYPE_F32, 1, n_spans, "span_lengths");
  io.option_question = new_input(ctx, GGML_TYPE_I32, n, 1, "option_question");
  io.types = new_input(ctx, GGML_TYPE_I32, nq, 1, "types");
  io.summary_mask = new_input(ctx, GGML_TYPE_F32, n, nq, "summary_mask");
  ggml_tensor* option_q = ggml_view_1d(ctx, io.option_question, n, 0);
  ggml_tensor* types = ggml_view_1d(ctx, io.types, nq, 0);

  // 1-3. Xn = LN(hidden); memory M = Xn Pmem^T; global g = Xn[T-1] (H-space).
  ggml_tensor* xn = layer_norm(ctx, io.hidden, w.hidden_norm);
  ggml_tensor* memory = linear(ctx, xn, w.memory_projection);  // [E, T]
  ggml_tensor* g =
      ggml_view_2d(ctx, xn, h, 1, xn->nb[1], static_cast<std::size_t>(n_tokens - 1) * xn->nb[1]);

  // 4-5. Span means of Xn: sum of the span's rows (a 0/1 selection product over the gathered
  // rows), then divided by the length, as torch's mean (sum, then div).
  ggml_tensor* rows =
      ggml_get_rows(ctx, xn, ggml_view_1d(ctx, io.span_tokens, n_rows, 0));  // [H, L]
  ggml_tensor* rows_t = ggml_cont(ctx, ggml_transpose(ctx, rows));           // [L, H]
  ggml_tensor* means =
      ggml_div(ctx, ggml_mul_mat(ctx, rows_t, io.span_select), io.span_lengths);  // [H, n_spans]
  ggml_tensor* qv = ggml_view_2d(ctx, means, h, nq, means->nb[1], 0);
  ggml_tensor* ctxv =
      ggml_view_2d(ctx, means, h, n, means->nb[1], static_cast<std::size_t>(nq) * means->nb[1]);

  // 6. Option queries O = (ctx Pctx^T + lex Plex^T) + qv Poq^T.
  ggml_tensor* oq = ggml_get_rows(ctx, linear(ctx, qv, w.option_question_projection), option_q);
  ggml_tensor* o = ggml_add(ctx,
                            ggml_add(ctx, linear(ctx, ctxv, w.option_context_projection),
                                     linear(ctx, io.lexical, w.option_lexical_projection)),
                            oq);  // [E, N]

  // 7. Evidence routing: cross-attention to LN'd memory, then feed-forward, both residual.
  for (const auto& l : w.evidence_layers) {
    ggml_tensor* mem_n = layer_norm(ctx, memory, l.memory_norm);
    o = ggml_add(ctx, o,
                 multi_head_attention(ctx, layer_norm(ctx, o, l.query_norm), mem_n, l.attention,
                                      c.heads, w.sqrt_head_dim));
    o = ggml_add(ctx, o,
                 feed_forward(ctx, layer_norm(ctx, o, l.feedforward_norm), l.feedforward_in,
                              l.feedforward_out));
  }

  // 9-10. base = qv Pq^T; per question softmax_j((R_j . base_q) / sqrt(E)) over its own
  // options (the mask removes the others), summary s_q = sum_j alpha_j R_j.
  ggml_tensor* base = linear(ctx, qv, w.question_projection);                     // [E, nq]
  ggml_tensor* scores = ggml_div(ctx, ggml_mul_mat(ctx, o, base), w.sqrt_width);  // [N, nq]
  ggml_tensor* alpha = ggml_soft_max_ext(ctx, scores, io.summary_mask, 1.0f, 0.0f);
  ggml_tensor* summary =
      ggml_mul_mat(ctx, ggml_cont(ctx, ggml_transpose(ctx, o)), alpha);  // [E, nq]

  // 11. Fields x = ((base + LN(s)) + g Pglob^T) + type_embedding[type].
  ggml_tensor* x = ggml_add(ctx, base, layer_norm(ctx, summary, w.option_summary_norm));
  x = ggml_add(ctx, x, linear(ctx, g, w.global_projection));
  x = ggml_add(ctx, x, ggml_get_rows(ctx, w.type_embedding, types));

  // 12. Decoder layers (norm_first): self-attention, cross-attention to the raw memory, FF.
  for (const auto& l : w.layers) {
    ggml_tensor* xs = layer_norm(ctx, x, l.norm1);
    x = ggml_add(ctx, x, multi_head_attention(ctx, xs, xs, l.self_attn, c.heads, w.sqrt_head_dim));
    x = ggml_add(ctx, x,
                 multi_head_attention(ctx, layer_norm(ctx, x, l.norm2), memory, l.cross_attn,
                                      c.heads, w.sqrt_head_dim));
    x = ggml_add(ctx, x, feed_forward(ctx, layer_norm(ctx, x, l.norm3), l.linear1, l.linear2));
  }
  // 13. fz = LN(x; field_norm).
  ggml_tensor* fz = layer_norm(ctx, x, w.field_norm);

  // 14. Scoring, all options at once (each option paired with its question's rows).
  ggml_tensor* anchor = l2_normalize(ctx, ggml_add(ctx, qv, g));  // [H, nq]
  ggml_tensor* lex_anchor = l2_normalize(ctx, io.lexical);        // [H, N]
  ggml_tensor* prior_cos =
      ggml_sum_rows(ctx, ggml_mul(ctx, lex_anchor, ggml_get_rows(ctx, anchor, option_q)));
  // Folded scales (llama.cpp's decision.scales) are the multipliers themselves.
  ggml_tensor* prior_scale =
      w.scales_folded ? w.prior_logit_scale : clamped_exp_scale(ctx, w.prior_logit_scale);
  ggml_tensor* joint_scale =
      w.scales_folded ? w.joint_logit_scale : clamped_exp_scale(ctx, w.joint_logit_scale);
  ggml_tensor* gate = w.scales_folded ? w.residual_gate : ggml_sigmoid(ctx, w.residual_gate);
  ggml_tensor* prior = ggml_mul(ctx, prior_cos, prior_scale);  // [1, N]

  ggml_tensor* on = layer_norm(ctx, o, w.option_norm);  // [E, N]
  ggml_tensor* f = ggml_get_rows(ctx, fz, option_q);    // [E, N]
  ggml_tensor* cos = cosine_similarity(ctx, f, on);     // [1, N]
  ggml_tensor* feat = ggml_concat(ctx, f, on, 0);
  feat = ggml_concat(ctx, feat, ggml_mul(ctx, f, on), 0);
  feat = ggml_concat(ctx, feat, ggml_abs(ctx, ggml_sub(ctx, f, on)), 0);      // [4E, N]
  ggml_tensor* res = feed_forward(ctx, feat, w.residual_in, w.residual_out);  // [1, N]
  ggml_tensor* joint = ggml_add(ctx, ggml_mul(ctx, cos, joint_scale), res);
  io.logits = ggml_add(ctx, prior, ggml_mul(ctx, joint, gate));
  ggml_set_name(io.logits, "logits");
  ggml_set_output(io.logits);
  ggml_build_forward_expand(gf, io.logits);
  return io;
}

template <typename T>
void upload(ggml_tensor* t, const std::vector<T>& v) {
  ggml_backend_tensor_set(t, v.data(), 0, v.size() * sizeof(T));
}

/// A graph allocator on `backend`'s default buffer type.
ggml_gallocr_ptr new_allocator(ggml_backend_t backend) {
  ggml_gallocr_ptr a(ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend)));
  if (!a) throw Error(ErrorKind::internal, "internal", "ggml_gallocr_new failed");
  return a;
}

/// A graph and its tensors (their metadata in memory the builder's caller owns).
struct BuiltGraph {
  ggml_context_ptr ctx;
  ggml_cgraph* gf = nullptr;
  GraphIo io;
};

}  // namespace

struct JointSchemaHead::Impl {
  ggml_backend_ptr backend;
  HeadModel model;
  bool keep_outgrown;  ///< device::Quirks::stale_descriptor_reads
  ggml_gallocr_ptr allocator;
  std::vector<ggml_gallocr_ptr> outgrown;  ///< kept buffers (keep_outgrown)
  std::vector<std::uint8_t> graph_memory;  ///< reused ggml context memory (tensor metadata only)

  Impl(const HeadWeights& weights, ggml_backend_ptr b, bool keep)
      : backend(std::move(b)),
        model(weights, backend.get()),
        keep_outgrown(keep),
        allocator(new_allocator(backend.get())) {}

  /// The backend goes first, then the buffers (weights, compute, kept): no device memory is
  /// freed while the backend that dispatched over it lives
  /// (device::Quirks::stale_descriptor_reads).
  ~Impl() { backend.reset(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  std::size_t graph_size() const {
    const auto& c = model.config();
    return static_cast<std::size_t>(512 + 128 * c.routing_layers + 256 * c.layers);
  }

  /// The head's graph for a record of `n_tokens` packed as `p`, its tensor metadata in `memory`
  /// (grown to fit; it must outlive the graph).
  BuiltGraph build(std::int64_t n_tokens, const PackedRecord& p,
                   std::vector<std::uint8_t>& memory) const {
    BuiltGraph g;
    const std::size_t size = graph_size();
    const std::size_t bytes =
        ggml_tensor_overhead() * size * 4 + ggml_graph_overhead_custom(size, false);
    if (memory.size() < bytes) memory.resize(bytes);
    g.ctx.reset(ggml_init({bytes, memory.data(), true}));
    if (!g.ctx) throw Error(ErrorKind::internal, "internal", "ggml_init failed for the head graph");
    g.gf = ggml_new_graph_custom(g.ctx.get(), size, false);
    g.io = build_forward(g.ctx.get(), g.gf, model.tensors(), model.config(), n_tokens, p);
    return g;
  }

  /// Bytes of compute buffer `gf` needs (measured by a fresh allocator, nothing allocated).
  std::size_t needed_bytes(ggml_cgraph* gf) const {
    ggml_gallocr_ptr measure = new_allocator(backend.get());
    std::size_t bytes = 0;
    ggml_gallocr_reserve_n_size(measure.get(), gf, nullptr, nullptr, &bytes);
    return bytes;
  }

  /// keep_outgrown: when `gf` (a record of `n_tokens` with `questions`) needs more than
  /// the current compute buffer, keep that buffer and reserve a new one for twice the tokens (or,
  /// when the device cannot hold that, for `gf` itself), so that ggml_gallocr_alloc_graph never
  /// frees one itself. Throws clef::Error (internal) when not even `gf` fits.
  void make_room(ggml_cgraph* gf, std::int64_t n_tokens, std::span<const HeadQuestion> questions) {
    if (needed_bytes(gf) <= ggml_gallocr_get_buffer_size(allocator.get(), 0)) return;
    const auto padded_tokens =
        static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(n_tokens) * 2));
    std::vector<std::uint8_t> memory;
    const BuiltGraph padded = build(padded_tokens, pack_record(padded_tokens, questions), memory);
    ggml_gallocr_ptr larger = new_allocator(backend.get());
    if (!ggml_gallocr_reserve(larger.get(), padded.gf) && !ggml_gallocr_reserve(larger.get(), gf)) {
      throw Error(ErrorKind::internal, "internal",
                  "cannot allocate the joint schema head's graph on " +
                      std::string(ggml_backend_name(backend.get())));
    }
    outgrown.push_back(std::move(allocator));
    allocator = std::move(larger);
  }
};

namespace {

ggml_backend_ptr cpu_backend(int n_threads) {
  if (n_threads < 1) {
    throw Error(ErrorKind::internal, "internal", "joint schema head: n_threads must be >= 1");
  }
  ggml_backend_ptr b(ggml_backend_cpu_init());
  if (!b) throw Error(ErrorKind::internal, "internal", "ggml_backend_cpu_init failed");
  ggml_backend_cpu_set_n_threads(b.get(), n_threads);
  return b;
}

}  // namespace

JointSchemaHead::JointSchemaHead(const HeadWeights& weights, int n_threads)
    : JointSchemaHead(weights, cpu_backend(n_threads)) {}

JointSchemaHead::JointSchemaHead(const HeadWeights& weights, ggml_backend_ptr backend,
                                 const device::Quirks& quirks) {
  if (!backend) throw Error(ErrorKind::internal, "internal", "joint schema head: no backend");
  impl_ = std::make_unique<Impl>(weights, std::move(backend), quirks.stale_descriptor_reads);
}

JointSchemaHead::~JointSchemaHead() = default;
JointSchemaHead::JointSchemaHead(JointSchemaHead&&) noexcept = default;
JointSchemaHead& JointSchemaHead::operator=(JointSchemaHead&&) noexcept = default;

const HeadConfig& JointSchemaHead::config() const noexcept {
  return impl_->model.config();
}

std::vector<std::string> JointSchemaHead::unsupported_ops() {
  // One question of each type over a short record: every op forward() builds.
  const std::int64_t n_tokens = 16;
  const std::vector<HeadQuestion> questions = {{0, {1, 2}, {{3, 4}, {5, 6}}},
                                               {1, {7, 8}, {{9, 10}, {10, 12}}},
                                               {2, {12, 13}, {{13, 14}, {14, 15}}}};
  std::vector<std::uint8_t> memory;
  const BuiltGraph g = impl_->build(n_tokens, pack_record(n_tokens, questions), memory);
  ggml_cgraph* gf = g.gf;
  std::vector<std::string> out;
  for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) {
    const ggml_tensor* node = ggml_graph_node(gf, i);
    if (!ggml_backend_supports_op(impl_->backend.get(), node)) {
      const std::string op = ggml_op_desc(node);
      if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
    }
  }
  return out;
}

std::string JointSchemaHead::backend_name() const {
  return ggml_backend_name(impl_->backend.get());
}

std::vector<std::vector<float>> JointSchemaHead::forward(std::span<const float> hidden,
                                                         std::int64_t n_tokens,
                                                         std::span<const HeadQuestion> questions,
                                                         std::span<const float> lexical) {
  const HeadConfig& c = impl_->model.config();
  if (n_tokens < 1) throw head_input_error("no tokens");
  if (hidden.size() != static_cast<std::size_t>(n_tokens * c.hidden_size)) {
    throw head_input_error("hidden states hold " + std::to_string(hidden.size()) +
                           " values, expected " + std::to_string(n_tokens) + " x " +
                           std::to_string(c.hidden_size));
  }
  const PackedRecord p = pack_record(n_tokens, questions);
  if (lexical.size() != static_cast<std::size_t>(p.n_options * c.hidden_size)) {
    throw head_input_error("lexical vectors hold " + std::to_string(lexical.size()) +
                           " values, expected " + std::to_string(p.n_options) + " x " +
                           std::to_string(c.hidden_size));
  }

  const BuiltGraph g = impl_->build(n_tokens, p, impl_->graph_memory);
  ggml_cgraph* gf = g.gf;
  const GraphIo& io = g.io;

  if (impl_->keep_outgrown) impl_->make_room(gf, n_tokens, questions);
  if (!ggml_gallocr_alloc_graph(impl_->allocator.get(), gf)) {
    throw Error(ErrorKind::internal, "internal", "cannot allocate the joint schema head's graph");
  }
  ggml_backend_tensor_set(io.hidden, hidden.data(), 0, hidden.size() * sizeof(float));
  ggml_backend_tensor_set(io.lexical, lexical.data(), 0, lexical.size() * sizeof(float));
  upload(io.span_tokens, p.span_tokens);
  upload(io.span_select, p.span_select);
  upload(io.span_lengths, p.span_lengths);
  upload(io.option_question, p.option_question);
  upload(io.types, p.types);
  upload(io.summary_mask, p.summary_mask);
  if (ggml_backend_graph_compute(impl_->backend.get(), gf) != GGML_STATUS_SUCCESS) {
    throw Error(ErrorKind::internal, "internal", "the joint schema head's graph failed to compute");
  }
  std::vector<float> flat(static_cast<std::size_t>(p.n_options));
  ggml_backend_tensor_get(io.logits, flat.data(), 0, flat.size() * sizeof(float));

  std::vector<std::vector<float>> out;
  std::size_t k = 0;
  for (const auto& q : questions) {
    out.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(k),
                     flat.begin() + static_cast<std::ptrdiff_t>(k + q.options.size()));
    k += q.options.size();
  }
  return out;
}

}  // namespace clef::head
