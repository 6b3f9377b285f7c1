#include "tune/head_trainer.hpp"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpp.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>

#include "head/head_model.hpp"
#include "head/head_parameters.hpp"
#include "util/error.hpp"

namespace clef::tune {

namespace {

Error internal(const std::string& message) {
  return Error(ErrorKind::internal, "internal", "head training: " + message);
}

ggml_backend_ptr cpu_backend(int n_threads) {
  if (n_threads < 1) throw internal("n_threads must be >= 1");
  ggml_backend_ptr b(ggml_backend_cpu_init());
  if (!b) throw internal("ggml_backend_cpu_init failed");
  ggml_backend_cpu_set_n_threads(b.get(), n_threads);
  return b;
}

ggml_gallocr_ptr new_allocator(ggml_backend_t backend) {
  ggml_gallocr_ptr a(ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend)));
  if (!a) throw internal("ggml_gallocr_new failed");
  return a;
}

/// A ggml context for graph metadata only, in `memory` (grown to fit `n_nodes` nodes).
ggml_context_ptr graph_context(std::vector<std::uint8_t>& memory, std::size_t n_nodes, bool grads) {
  const std::size_t bytes =
      ggml_tensor_overhead() * n_nodes * 2 + ggml_graph_overhead_custom(n_nodes, grads);
  if (memory.size() < bytes) memory.resize(bytes);
  ggml_context_ptr ctx(ggml_init({bytes, memory.data(), true}));
  if (!ctx) throw internal("ggml_init failed");
  return ctx;
}

ggml_tensor* input(ggml_context* ctx, std::int64_t ne0, std::int64_t ne1, const char* name) {
  ggml_tensor* t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, ne1);
  ggml_set_name(t, name);
  ggml_set_input(t);
  return t;
}

/// Copies of every parameter's shape (one tensor each) in a context allocated on `backend`.
struct TensorSet {
  ggml_context_ptr ctx;
  ggml_backend_buffer_ptr buffer;
  std::vector<ggml_tensor*> tensors;

  TensorSet(const std::vector<head::HeadModel::NamedTensor>& like, const char* what,
            ggml_backend_t backend) {
    ctx.reset(ggml_init({ggml_tensor_overhead() * like.size(), nullptr, true}));
    if (!ctx) throw internal("ggml_init failed");
    for (const auto& p : like) {
      ggml_tensor* t = ggml_dup_tensor(ctx.get(), p.tensor);
      ggml_format_name(t, "%s %s", what, p.name.c_str());
      tensors.push_back(t);
    }
    buffer.reset(ggml_backend_alloc_ctx_tensors(ctx.get(), backend));
    if (!buffer) throw internal(std::string("cannot allocate the ") + what + " buffer");
    ggml_backend_buffer_clear(buffer.get(), 0);
  }
};

std::vector<float> read(const ggml_tensor* t) {
  std::vector<float> v(static_cast<std::size_t>(ggml_nelements(t)));
  ggml_backend_tensor_get(t, v.data(), 0, v.size() * sizeof(float));
  return v;
}

}  // namespace

struct HeadTrainer::Impl {
  ggml_backend_ptr backend;
  head::HeadModel model;
  TensorSet grads;
  TensorSet m;
  TensorSet v;
  std::unordered_map<const ggml_tensor*, ggml_tensor*> grad_of;
  /// One graph allocator per kind of graph (training, scoring, the norm, the optimizer step): each
  /// keeps its compute buffer at its own kind's size instead of one buffer reallocated (and its
  /// pages faulted in again) whenever the kinds alternate.
  enum Graph { training, scoring, norm, optimizer, n_graphs };
  std::array<ggml_gallocr_ptr, n_graphs> allocators;
  std::vector<std::uint8_t> graph_memory;
  std::int64_t step = 0;

  Impl(const head::HeadWeights& w, int n_threads)
      : backend(cpu_backend(n_threads)),
        model(w, backend.get()),
        grads(model.parameters(), "grad", backend.get()),
        m(model.parameters(), "adam_m", backend.get()),
        v(model.parameters(), "adam_v", backend.get()),
        allocators{new_allocator(backend.get()), new_allocator(backend.get()),
                   new_allocator(backend.get()), new_allocator(backend.get())} {
    const auto& params = model.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      ggml_set_param(params[i].tensor);
      grad_of.emplace(params[i].tensor, grads.tensors[i]);
    }
  }

  void compute(ggml_cgraph* gf) {
    if (ggml_backend_graph_compute(backend.get(), gf) != GGML_STATUS_SUCCESS) {
      throw internal("a training graph failed to compute");
    }
  }

  void allocate(ggml_cgraph* gf, Graph kind) {
    if (!ggml_gallocr_alloc_graph(allocators[kind].get(), gf)) {
      throw internal("cannot allocate a training graph");
    }
  }

  std::size_t index_of(std::string_view name) const {
    const auto& params = model.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].name == name) return i;
    }
    throw internal("no parameter \"" + std::string(name) + "\"");
  }
};

namespace {

/// Checks the sizes of `e` against the head and packs it.
head::PackedRecord pack(const HeadExample& e, const head::HeadConfig& c, bool with_targets) {
  if (e.n_tokens < 1) throw head::head_input_error("no tokens");
  if (e.hidden.size() != static_cast<std::size_t>(e.n_tokens * c.hidden_size)) {
    throw head::head_input_error("hidden states hold " + std::to_string(e.hidden.size()) +
                                 " values, expected " + std::to_string(e.n_tokens) + " x " +
                                 std::to_string(c.hidden_size));
  }
  head::PackedRecord p = head::pack_record(e.n_tokens, e.questions);
  if (e.lexical.size() != static_cast<std::size_t>(p.n_options * c.hidden_size)) {
    throw head::head_input_error("lexical vectors hold " + std::to_string(e.lexical.size()) +
                                 " values, expected " + std::to_string(p.n_options) + " x " +
                                 std::to_string(c.hidden_size));
  }
  if (with_targets) {
    if (e.targets.size() != e.questions.size()) {
      throw internal(std::to_string(e.targets.size()) + " target lists for " +
                     std::to_string(e.questions.size()) + " questions");
    }
    bool any = false;
    for (std::size_t q = 0; q < e.questions.size(); ++q) {
      any = any || !e.targets[q].empty();
      if (!e.targets[q].empty() && e.targets[q].size() != e.questions[q].options.size()) {
        throw internal("question " + std::to_string(q) + " has " +
                       std::to_string(e.questions[q].options.size()) + " options and " +
                       std::to_string(e.targets[q].size()) + " targets");
      }
    }
    if (!any) throw internal("a record without a labeled question");
  }
  return p;
}

}  // namespace

HeadTrainer::HeadTrainer(const head::HeadWeights& initial, int n_threads) {
  if (initial.folded_scales()) {
    throw Error(ErrorKind::invalid_request, "invalid_request",
                "this head holds folded scales (a llama.cpp clef GGUF): training needs the raw "
                "parameters of joint_head.safetensors");
  }
  impl_ = std::make_unique<Impl>(initial, n_threads);
}

HeadTrainer::~HeadTrainer() = default;
HeadTrainer::HeadTrainer(HeadTrainer&&) noexcept = default;
HeadTrainer& HeadTrainer::operator=(HeadTrainer&&) noexcept = default;

const head::HeadConfig& HeadTrainer::config() const noexcept {
  return impl_->model.config();
}

double HeadTrainer::accumulate(const HeadExample& e, double weight) {
  Impl& s = *impl_;
  const head::HeadConfig& c = s.model.config();
  const head::PackedRecord p = pack(e, c, true);
  const std::int64_t n = p.n_options;
  const std::int64_t nq = p.n_questions;

  const std::size_t size = head::forward_graph_size(c) * 8;
  ggml_context_ptr ctx = graph_context(s.graph_memory, size, true);
  ggml_cgraph* gf = ggml_new_graph_custom(ctx.get(), size, true);
  const head::GraphIo io = head::build_forward(ctx.get(), gf, s.model.tensors(), c, e.n_tokens, p);

  // The recipe's decision_loss for this record, times `weight`: per question, the softmax over
  // its own options (the summary mask keeps each question's row to them; the others are exactly
  // 0, as are their targets), sum over options of (p - target)^2, then weight / n_questions each.
  ggml_tensor* targets = input(ctx.get(), n, nq, "targets");
  ggml_tensor* question_weights = input(ctx.get(), 1, nq, "question_weights");
  // Each question's logits are centered on their mean before the softmax: the softmax does not
  // see the shift (the loss's value is the same), and its gradient then sums to 0 over a
  // question's options up to the rounding of one subtraction. Without it, the softmax backward's
  // rounding (p (g - p.g) summed, with sum(p) = 1 - eps) leaves ~1e-8 on parameters whose true
  // gradient is 0 (residual_scorer.3.bias adds one number to every option), which AdamW's
  // normalization turns into steps of order lr (tests/data/oracle/tune/README.md).
  ggml_tensor* own = input(ctx.get(), n, nq, "own_options");
  ggml_tensor* inv_count = input(ctx.get(), 1, nq, "inverse_option_counts");
  ggml_tensor* logits =
      ggml_repeat(ctx.get(), ggml_reshape_2d(ctx.get(), io.logits, n, 1), targets);  // [N, nq]
  ggml_tensor* mean =
      ggml_mul(ctx.get(), ggml_sum_rows(ctx.get(), ggml_mul(ctx.get(), logits, own)), inv_count);
  ggml_tensor* probs =
      ggml_soft_max_ext(ctx.get(), ggml_sub(ctx.get(), logits, mean), io.summary_mask, 1.0f, 0.0f);
  ggml_tensor* brier =
      ggml_sum_rows(ctx.get(), ggml_sqr(ctx.get(), ggml_sub(ctx.get(), probs, targets)));
  ggml_set_output(brier);
  ggml_tensor* loss = ggml_sum(ctx.get(), ggml_mul(ctx.get(), brier, question_weights));
  ggml_set_loss(loss);
  ggml_build_forward_expand(gf, loss);

  std::vector<ggml_tensor*> accumulators(static_cast<std::size_t>(ggml_graph_n_nodes(gf)), nullptr);
  for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) {
    const auto it = s.grad_of.find(ggml_graph_node(gf, i));
    if (it != s.grad_of.end()) accumulators[static_cast<std::size_t>(i)] = it->second;
  }
  ggml_build_backward_expand(ctx.get(), gf, accumulators.data());
  ggml_tensor* seed = ggml_graph_get_grad_acc(gf, loss);
  ggml_set_input(seed);

  s.allocate(gf, Impl::training);
  head::set_inputs(io, p, e.hidden, e.lexical);
  // Targets in the [N, n_questions] layout of the softmax (0 outside each question's options);
  // an unlabeled question weighs 0, the labeled ones weight / (labeled questions) each.
  std::vector<float> t(static_cast<std::size_t>(n * nq), 0.0f);
  std::vector<float> w(static_cast<std::size_t>(nq), 0.0f);
  std::size_t labeled = 0;
  for (const auto& q : e.targets) labeled += q.empty() ? 0 : 1;
  std::size_t o = 0;
  for (std::size_t q = 0; q < e.questions.size(); ++q) {
    const std::size_t n_options = e.questions[q].options.size();
    if (!e.targets[q].empty()) {
      w[q] = static_cast<float>(weight / static_cast<double>(labeled));
      for (std::size_t j = 0; j < n_options; ++j) {
        t[q * static_cast<std::size_t>(n) + o + j] = e.targets[q][j];
      }
    }
    o += n_options;
  }
  std::vector<float> own_options(static_cast<std::size_t>(n * nq), 0.0f);
  std::vector<float> inverse_counts(static_cast<std::size_t>(nq), 0.0f);
  o = 0;
  for (std::size_t q = 0; q < e.questions.size(); ++q) {
    const std::size_t n_options = e.questions[q].options.size();
    for (std::size_t j = 0; j < n_options; ++j)
      own_options[q * static_cast<std::size_t>(n) + o + j] = 1.0f;
    inverse_counts[q] = 1.0f / static_cast<float>(n_options);
    o += n_options;
  }
  ggml_backend_tensor_set(targets, t.data(), 0, t.size() * sizeof(float));
  ggml_backend_tensor_set(question_weights, w.data(), 0, w.size() * sizeof(float));
  ggml_backend_tensor_set(own, own_options.data(), 0, own_options.size() * sizeof(float));
  ggml_backend_tensor_set(inv_count, inverse_counts.data(), 0,
                          inverse_counts.size() * sizeof(float));
  const float one = 1.0f;
  ggml_backend_tensor_set(seed, &one, 0, sizeof(float));
  s.compute(gf);

  const std::vector<float> per_question = read(brier);
  double sum = 0;
  for (std::size_t q = 0; q < per_question.size(); ++q) {
    if (!e.targets[q].empty()) sum += per_question[q];
  }
  return sum / static_cast<double>(labeled);
}

std::vector<std::vector<float>> HeadTrainer::logits(const HeadExample& e) {
  Impl& s = *impl_;
  const head::HeadConfig& c = s.model.config();
  const head::PackedRecord p = pack(e, c, false);
  const std::size_t size = head::forward_graph_size(c);
  ggml_context_ptr ctx = graph_context(s.graph_memory, size, false);
  ggml_cgraph* gf = ggml_new_graph_custom(ctx.get(), size, false);
  const head::GraphIo io = head::build_forward(ctx.get(), gf, s.model.tensors(), c, e.n_tokens, p);
  s.allocate(gf, Impl::scoring);
  head::set_inputs(io, p, e.hidden, e.lexical);
  s.compute(gf);
  const std::vector<float> flat = read(io.logits);
  std::vector<std::vector<float>> out;
  std::size_t k = 0;
  for (const auto& q : e.questions) {
    out.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(k),
                     flat.begin() + static_cast<std::ptrdiff_t>(k + q.options.size()));
    k += q.options.size();
  }
  return out;
}

StepReport HeadTrainer::step(const AdamWSettings& a, double max_grad_norm) {
  Impl& s = *impl_;
  const auto& params = s.model.parameters();
  const std::size_t size = params.size() * 8 + 16;
  StepReport report;

  // The global L2 norm over every gradient (ggml_sum accumulates in double).
  {
    ggml_context_ptr ctx = graph_context(s.graph_memory, size, false);
    ggml_cgraph* gf = ggml_new_graph_custom(ctx.get(), size, false);
    ggml_tensor* total = nullptr;
    for (ggml_tensor* g : s.grads.tensors) {
      ggml_tensor* sq = ggml_sum(ctx.get(), ggml_sqr(ctx.get(), g));
      total = total == nullptr ? sq : ggml_add(ctx.get(), total, sq);
    }
    ggml_set_output(total);
    ggml_build_forward_expand(gf, total);
    s.allocate(gf, Impl::norm);
    s.compute(gf);
    float sum_sq = 0;
    ggml_backend_tensor_get(total, &sum_sq, 0, sizeof(float));
    report.grad_norm = std::sqrt(static_cast<double>(sum_sq));
  }
  // _clip_gradients, in f32 as torch computes it: coefficient = min(1, max / (norm + 1e-6)).
  const float norm = static_cast<float>(report.grad_norm);
  const float coefficient =
      std::min(1.0f, static_cast<float>(max_grad_norm) / (norm + static_cast<float>(1e-6)));
  report.clip_coefficient = coefficient;
  if (!std::isfinite(norm)) {
    ggml_backend_buffer_clear(s.grads.buffer.get(), 0);
    report.step = s.step;
    return report;
  }

  // torch.optim.AdamW: p *= 1 - lr wd; m, v updated; p -= lr m_hat / (sqrt(v_hat) + eps) with
  // m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t) (ggml_opt_step_adamw's parameters).
  ++s.step;
  {
    ggml_context_ptr ctx = graph_context(s.graph_memory, size, false);
    ggml_cgraph* gf = ggml_new_graph_custom(ctx.get(), size, false);
    ggml_tensor* adamw = input(ctx.get(), 7, 1, "adamw_params");
    ggml_tensor* clip = coefficient < 1.0f ? input(ctx.get(), 1, 1, "clip_coefficient") : nullptr;
    for (std::size_t i = 0; i < params.size(); ++i) {
      // A clip that does not bind (coefficient 1) multiplies by 1: the gradient goes as it is.
      ggml_tensor* g =
          clip != nullptr ? ggml_mul(ctx.get(), s.grads.tensors[i], clip) : s.grads.tensors[i];
      ggml_build_forward_expand(gf, ggml_opt_step_adamw(ctx.get(), params[i].tensor, g,
                                                        s.m.tensors[i], s.v.tensors[i], adamw));
    }
    s.allocate(gf, Impl::optimizer);
    const double t = static_cast<double>(s.step);
    const float values[7] = {static_cast<float>(a.lr),
                             static_cast<float>(a.beta1),
                             static_cast<float>(a.beta2),
                             static_cast<float>(a.eps),
                             static_cast<float>(a.weight_decay),
                             static_cast<float>(1.0 / (1.0 - std::pow(a.beta1, t))),
                             static_cast<float>(1.0 / (1.0 - std::pow(a.beta2, t)))};
    ggml_backend_tensor_set(adamw, values, 0, sizeof(values));
    if (clip != nullptr) ggml_backend_tensor_set(clip, &coefficient, 0, sizeof(float));
    s.compute(gf);
  }
  ggml_backend_buffer_clear(s.grads.buffer.get(), 0);
  report.step = s.step;
  return report;
}

std::vector<float> HeadTrainer::gradient(std::string_view name) const {
  return read(impl_->grads.tensors[impl_->index_of(name)]);
}

head::HeadWeights HeadTrainer::weights() const {
  const auto specs = head::head_parameter_specs(config());
  head::HeadWeights::TensorMap tensors;
  const auto& params = impl_->model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    tensors.emplace(params[i].name, head::HeadTensor{specs[i].shape, read(params[i].tensor)});
  }
  return head::HeadWeights::from_tensors(config(), std::move(tensors), std::nullopt,
                                         "the tuned head");
}

void HeadTrainer::set_weights(const head::HeadWeights& w) {
  const head::HeadConfig& c = config();
  const head::HeadConfig& o = w.config();
  if (w.folded_scales() || o.hidden_size != c.hidden_size || o.width != c.width ||
      o.routing_layers != c.routing_layers || o.layers != c.layers || o.heads != c.heads ||
      o.feedforward != c.feedforward) {
    throw Error(ErrorKind::invalid_request, "invalid_request",
                "set_weights: a head of another config (or with folded scales)");
  }
  for (const auto& p : impl_->model.parameters()) {
    const auto& values = w.at(p.name).values;
    ggml_backend_tensor_set(p.tensor, values.data(), 0, values.size() * sizeof(float));
  }
}

OptimizerState HeadTrainer::optimizer_state() const {
  OptimizerState out;
  out.step = impl_->step;
  for (ggml_tensor* t : impl_->m.tensors) out.m.push_back(read(t));
  for (ggml_tensor* t : impl_->v.tensors) out.v.push_back(read(t));
  return out;
}

void HeadTrainer::restore(const OptimizerState& state) {
  Impl& s = *impl_;
  const std::size_t n = s.model.parameters().size();
  const auto fits = [&](const std::vector<std::vector<float>>& values) {
    if (values.size() != n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (values[i].size() != static_cast<std::size_t>(ggml_nelements(s.m.tensors[i])))
        return false;
    }
    return true;
  };
  if (state.step < 0 || !fits(state.m) || !fits(state.v)) {
    throw Error(ErrorKind::invalid_request, "invalid_request",
                "the optimizer state does not match this head's parameters");
  }
  for (std::size_t i = 0; i < n; ++i) {
    ggml_backend_tensor_set(s.m.tensors[i], state.m[i].data(), 0, state.m[i].size() * 4);
    ggml_backend_tensor_set(s.v.tensors[i], state.v[i].data(), 0, state.v[i].size() * 4);
  }
  s.step = state.step;
}

}  // namespace clef::tune
