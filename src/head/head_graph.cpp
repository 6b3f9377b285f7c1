#include "head/head_graph.hpp"

#include <ggml-backend.h>

#include <algorithm>
#include <limits>

#include "head/head_graph_ops.hpp"

namespace clef::head {

namespace {

ggml_tensor* new_input(ggml_context* ctx, ggml_type type, std::int64_t ne0, std::int64_t ne1,
                       const char* name) {
  ggml_tensor* t = ggml_new_tensor_2d(ctx, type, ne0, ne1);
  ggml_set_name(t, name);
  ggml_set_input(t);
  return t;
}

template <typename T>
void upload(ggml_tensor* t, const std::vector<T>& v) {
  ggml_backend_tensor_set(t, v.data(), 0, v.size() * sizeof(T));
}

/// Uploads `lexical` and the index tensors of `p` (all but the hidden states).
void upload_record(const GraphIo& io, const PackedRecord& p, std::span<const float> lexical) {
  ggml_backend_tensor_set(io.lexical, lexical.data(), 0, lexical.size() * sizeof(float));
  upload(io.span_tokens, p.span_tokens);
  upload(io.span_select, p.span_select);
  upload(io.span_lengths, p.span_lengths);
  upload(io.option_question, p.option_question);
  upload(io.types, p.types);
  upload(io.summary_mask, p.summary_mask);
}

}  // namespace

Error head_input_error(const std::string& message) {
  return Error(ErrorKind::internal, "internal", "joint schema head input: " + message);
}

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

PackedBatch pack_batch(std::span<const BatchRecord> records) {
  if (records.empty()) throw head_input_error("no records");
  PackedBatch b;
  b.token_offsets.push_back(0);
  std::vector<HeadQuestion> shifted;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const BatchRecord& rec = records[r];
    pack_record(rec.n_tokens, rec.questions);  // each record's spans within its own rows
    const std::int64_t first = b.token_offsets.back();
    for (HeadQuestion q : rec.questions) {
      q.question = {q.question.start + first, q.question.end + first};
      for (Span& s : q.options) s = {s.start + first, s.end + first};
      shifted.push_back(std::move(q));
      b.question_record.push_back(static_cast<std::int32_t>(r));
    }
    b.token_offsets.push_back(first + rec.n_tokens);
    b.last_tokens.push_back(static_cast<std::int32_t>(first + rec.n_tokens - 1));
  }
  b.all = pack_record(b.n_tokens(), shifted);

  // The record of each option, then the masks (row-major [queries, keys]).
  std::vector<std::int32_t> option_record;
  for (std::int32_t q : b.all.option_question)
    option_record.push_back(b.question_record[static_cast<std::size_t>(q)]);
  const auto t = static_cast<std::size_t>(b.n_tokens());
  const auto mask = [&](const std::vector<std::int32_t>& query_record) {
    std::vector<float> m(query_record.size() * t, -std::numeric_limits<float>::infinity());
    for (std::size_t i = 0; i < query_record.size(); ++i) {
      const auto r = static_cast<std::size_t>(query_record[i]);
      for (auto k = b.token_offsets[r]; k < b.token_offsets[r + 1]; ++k)
        m[i * t + static_cast<std::size_t>(k)] = 0.0f;
    }
    return m;
  };
  b.option_token_mask = mask(option_record);
  b.question_token_mask = mask(b.question_record);
  const std::size_t nq = b.question_record.size();
  b.question_mask.assign(nq * nq, -std::numeric_limits<float>::infinity());
  for (std::size_t l = 0; l < nq; ++l) {
    for (std::size_t k = 0; k < nq; ++k) {
      if (b.question_record[l] == b.question_record[k]) b.question_mask[l * nq + k] = 0.0f;
    }
  }
  return b;
}

GraphIo build_forward(ggml_context* ctx, ggml_cgraph* gf, const HeadTensors& w, const HeadConfig& c,
                      std::int64_t n_tokens, const PackedRecord& p) {
  PackedBatch b;
  b.token_offsets = {0, n_tokens};
  b.last_tokens = {static_cast<std::int32_t>(n_tokens - 1)};
  b.all = p;
  return build_forward(ctx, gf, w, c, b);
}

/// The whole forward pass (README "The forward pass, precisely", steps 1-14) over a batch.
GraphIo build_forward(ggml_context* ctx, ggml_cgraph* gf, const HeadTensors& w, const HeadConfig& c,
                      const PackedBatch& b, Pass pass) {
  const PackedRecord& p = b.all;
  const std::int64_t h = c.hidden_size;
  const std::int64_t n_tokens = b.n_tokens();
  const std::int64_t nq = p.n_questions;
  const std::int64_t n = p.n_options;
  const auto n_rows = static_cast<std::int64_t>(p.span_tokens.size());
  const std::int64_t n_spans = nq + n;
  const auto n_records = static_cast<std::int64_t>(b.n_records());
  const bool batched = n_records > 1;
  GraphIo io;
  io.hidden = new_input(ctx, GGML_TYPE_F32, h, n_tokens, "hidden");
  io.lexical = new_input(ctx, GGML_TYPE_F32, h, n, "lexical");
  io.span_tokens = new_input(ctx, GGML_TYPE_I32, n_rows, 1, "span_tokens");
  io.span_select = new_input(ctx, GGML_TYPE_F32, n_rows, n_spans, "span_select");
  io.span_lengths = new_input(ctx, GGML_TYPE_F32, 1, n_spans, "span_lengths");
  io.option_question = new_input(ctx, GGML_TYPE_I32, n, 1, "option_question");
  io.types = new_input(ctx, GGML_TYPE_I32, nq, 1, "types");
  io.summary_mask = new_input(ctx, GGML_TYPE_F32, n, nq, "summary_mask");
  if (batched) {
    io.last_tokens = new_input(ctx, GGML_TYPE_I32, n_records, 1, "last_tokens");
    io.question_record = new_input(ctx, GGML_TYPE_I32, nq, 1, "question_record");
    io.option_token_mask = new_input(ctx, GGML_TYPE_F32, n_tokens, n, "option_token_mask");
    io.question_token_mask = new_input(ctx, GGML_TYPE_F32, n_tokens, nq, "question_token_mask");
    io.question_mask = new_input(ctx, GGML_TYPE_F32, nq, nq, "question_mask");
  }
  ggml_tensor* option_q = ggml_view_1d(ctx, io.option_question, n, 0);
  ggml_tensor* types = ggml_view_1d(ctx, io.types, nq, 0);

  // 1-3. Xn = LN(hidden); memory M = Xn Pmem^T; global g = Xn[T-1] (H-space), per record. For
  // training the LN's affine part goes into Pmem (Pass::training) and onto the gathered rows.
  const bool folded = pass == Pass::training;
  ggml_tensor* normed =
      folded ? normalize(ctx, io.hidden) : layer_norm(ctx, io.hidden, w.hidden_norm);
  const auto xn_of = [&](ggml_tensor* gathered) {
    return folded ? layer_norm_affine(ctx, gathered, w.hidden_norm) : gathered;
  };
  ggml_tensor* memory = folded ? folded_linear(ctx, normed, w.hidden_norm, w.memory_projection)
                               : linear(ctx, normed, w.memory_projection);  // [E, T]
  ggml_tensor* g =
      xn_of(batched ? ggml_get_rows(ctx, normed,
                                    ggml_view_1d(ctx, io.last_tokens, n_records, 0))  // [H, B]
                    : ggml_view_2d(ctx, normed, h, 1, normed->nb[1],
                                   static_cast<std::size_t>(n_tokens - 1) * normed->nb[1]));
  // Each question's g, its record's (one record's [H, 1] broadcasts as it is).
  const auto per_question = [&](ggml_tensor* per_record) {
    return batched ? ggml_get_rows(ctx, per_record, ggml_view_1d(ctx, io.question_record, nq, 0))
                   : per_record;
  };

  // 4-5. Span means of Xn: sum of the span's rows (a 0/1 selection product over the gathered
  // rows), then divided by the length, as torch's mean (sum, then div).
  ggml_tensor* rows_t = ggml_cont(
      ctx,
      ggml_transpose(ctx, ggml_get_rows(ctx, normed,
                                        ggml_view_1d(ctx, io.span_tokens, n_rows, 0))));  // [L, H]
  if (folded) {
    // The affine part after the transposition, its parameters as [1, H]: the gradient reaching
    // it is then contiguous (ggml sums a broadcast operand's gradient from contiguous rows only).
    rows_t = layer_norm_affine(ctx, rows_t,
                               {ggml_reshape_2d(ctx, w.hidden_norm.weight, 1, h),
                                ggml_reshape_2d(ctx, w.hidden_norm.bias, 1, h)});
  }
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
                                      c.heads, w.sqrt_head_dim, io.option_token_mask));
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
  x = ggml_add(ctx, x, per_question(linear(ctx, g, w.global_projection)));
  x = ggml_add(ctx, x, ggml_get_rows(ctx, w.type_embedding, types));

  // 12. Decoder layers (norm_first): self-attention (within a record), cross-attention to the
  // raw memory, FF.
  for (const auto& l : w.layers) {
    ggml_tensor* xs = layer_norm(ctx, x, l.norm1);
    x = ggml_add(
        ctx, x,
        multi_head_attention(ctx, xs, xs, l.self_attn, c.heads, w.sqrt_head_dim, io.question_mask));
    x = ggml_add(ctx, x,
                 multi_head_attention(ctx, layer_norm(ctx, x, l.norm2), memory, l.cross_attn,
                                      c.heads, w.sqrt_head_dim, io.question_token_mask));
    x = ggml_add(ctx, x, feed_forward(ctx, layer_norm(ctx, x, l.norm3), l.linear1, l.linear2));
  }
  // 13. fz = LN(x; field_norm).
  ggml_tensor* fz = layer_norm(ctx, x, w.field_norm);

  // 14. Scoring, all options at once (each option paired with its question's rows).
  ggml_tensor* anchor = l2_normalize(ctx, ggml_add(ctx, qv, per_question(g)));  // [H, nq]
  ggml_tensor* lex_anchor = l2_normalize(ctx, io.lexical);                      // [H, N]
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

std::size_t forward_graph_size(const HeadConfig& c) {
  return static_cast<std::size_t>(512 + 128 * c.routing_layers + 256 * c.layers);
}

void set_inputs(const GraphIo& io, const PackedRecord& p, std::span<const float> hidden,
                std::span<const float> lexical) {
  ggml_backend_tensor_set(io.hidden, hidden.data(), 0, hidden.size() * sizeof(float));
  upload_record(io, p, lexical);
}

void set_inputs(const GraphIo& io, const PackedBatch& b,
                std::span<const std::span<const float>> hidden, std::span<const float> lexical) {
  if (hidden.size() != b.n_records()) {
    throw head_input_error("hidden states of " + std::to_string(hidden.size()) + " records for " +
                           std::to_string(b.n_records()));
  }
  std::size_t offset = 0;
  for (const auto& rows : hidden) {
    ggml_backend_tensor_set(io.hidden, rows.data(), offset, rows.size() * sizeof(float));
    offset += rows.size() * sizeof(float);
  }
  upload_record(io, b.all, lexical);
  if (io.last_tokens != nullptr) {
    upload(io.last_tokens, b.last_tokens);
    upload(io.question_record, b.question_record);
    upload(io.option_token_mask, b.option_token_mask);
    upload(io.question_token_mask, b.question_token_mask);
    upload(io.question_mask, b.question_mask);
  }
}

std::vector<HeadQuestion> every_op_questions() {
  return {{0, {1, 2}, {{3, 4}, {5, 6}}},
          {1, {7, 8}, {{9, 10}, {10, 12}}},
          {2, {12, 13}, {{13, 14}, {14, 15}}}};
}

void add_unsupported_ops(ggml_backend_t backend, const ggml_cgraph* gf,
                         std::vector<std::string>& out) {
  auto* graph = const_cast<ggml_cgraph*>(gf);  // ggml's accessors take a non-const graph
  for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
    const ggml_tensor* node = ggml_graph_node(graph, i);
    if (!ggml_backend_supports_op(backend, node)) {
      const std::string op = ggml_op_desc(node);
      if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
    }
  }
}

}  // namespace clef::head
