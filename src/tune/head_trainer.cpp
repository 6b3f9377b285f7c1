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

std::vector<float> read_values(const ggml_tensor* t) {
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

  /// device::Quirks::stale_descriptor_reads: a compute buffer a larger graph outgrows is kept
  /// (in `outgrown`) until the backend goes, never freed while it lives.
  bool keep_outgrown = false;
  std::vector<ggml_gallocr_ptr> outgrown;
  /// A batch's records in one graph (the CPU), or one graph per record (a device: on
  /// ggml-vulkan the batch graph's gradients drift from the authors' by up to a quarter of a
  /// tensor's largest, one graph per record's by 1.3%; tests/tune/device_training_test.cpp).
  bool batch_graphs = true;

  /// `source`: the starting head's weights, or its config (a zero head to load into).
  template <typename Source>
  Impl(const Source& source, ggml_backend_ptr b, bool keep)
      : backend(std::move(b)),
        model(source, backend.get()),
        grads(model.parameters(), "grad", backend.get()),
        m(model.parameters(), "adam_m", backend.get()),
        v(model.parameters(), "adam_v", backend.get()),
        allocators{new_allocator(backend.get()), new_allocator(backend.get()),
                   new_allocator(backend.get()), new_allocator(backend.get())},
        keep_outgrown(keep) {
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

  /// The backend goes first, then the buffers (device::Quirks::stale_descriptor_reads).
  ~Impl() { backend.reset(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void allocate(ggml_cgraph* gf, Graph kind) {
    if (keep_outgrown) {
      // A graph that needs more than the kind's buffer gets a new allocator; the old one (and
      // its buffer) is kept, not freed under the backend.
      ggml_gallocr_ptr measure = new_allocator(backend.get());
      std::size_t bytes = 0;
      ggml_gallocr_reserve_n_size(measure.get(), gf, nullptr, nullptr, &bytes);
      if (bytes > ggml_gallocr_get_buffer_size(allocators[kind].get(), 0)) {
        outgrown.push_back(std::move(allocators[kind]));
        allocators[kind] = new_allocator(backend.get());
        if (!ggml_gallocr_reserve(allocators[kind].get(), gf)) {
          throw internal("cannot allocate a training graph on " +
                         std::string(ggml_backend_name(backend.get())));
        }
      }
    }
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
  impl_ = std::make_unique<Impl>(initial, cpu_backend(n_threads), false);
}

HeadTrainer::HeadTrainer(const head::HeadConfig& config, int n_threads)
    : impl_(std::make_unique<Impl>(config, cpu_backend(n_threads), false)) {}

HeadTrainer::HeadTrainer(const head::HeadConfig& config, ggml_backend_ptr backend,
                         bool keep_outgrown) {
  if (!backend) throw internal("no backend");
  const bool cpu = std::string_view(ggml_backend_name(backend.get())) == "CPU";
  impl_ = std::make_unique<Impl>(config, std::move(backend), keep_outgrown);
  impl_->batch_graphs = cpu;
}

std::string HeadTrainer::backend_name() const {
  return ggml_backend_name(impl_->backend.get());
}

HeadTrainer::~HeadTrainer() = default;
HeadTrainer::HeadTrainer(HeadTrainer&&) noexcept = default;
HeadTrainer& HeadTrainer::operator=(HeadTrainer&&) noexcept = default;

const head::HeadConfig& HeadTrainer::config() const noexcept {
  return impl_->model.config();
}

double HeadTrainer::accumulate(const HeadExample& e, double weight) {
  const double weights[] = {weight};
  return accumulate(std::span<const HeadExample>(&e, 1), weights).front();
}

namespace {

/// A batch's training graph: the forward of its records, the recipe's loss and ggml's backward
/// into the trainer's accumulators, with the inputs to set once it is allocated.
struct TrainingGraph {
  ggml_context_ptr ctx;
  ggml_cgraph* gf = nullptr;
  head::PackedBatch batch;
  head::GraphIo io;
  ggml_tensor* targets = nullptr;
  ggml_tensor* question_weights = nullptr;
  ggml_tensor* own = nullptr;
  ggml_tensor* inv_count = nullptr;
  ggml_tensor* brier = nullptr;
  ggml_tensor* seed = nullptr;
};

}  // namespace

struct HeadTrainer::Graphs {
  /// The training graph of `records` (each record's tokens and questions) in `memory`, its
  /// backward adding into `grad_of`'s accumulators.
  static TrainingGraph training(const head::HeadModel& model,
                                const std::unordered_map<const ggml_tensor*, ggml_tensor*>& grad_of,
                                std::span<const head::BatchRecord> records,
                                std::vector<std::uint8_t>& memory) {
    const head::HeadConfig& c = model.config();
    TrainingGraph g;
    g.batch = head::pack_batch(records);
    const std::int64_t n = g.batch.all.n_options;
    const std::int64_t nq = g.batch.all.n_questions;
    const std::size_t size = head::forward_graph_size(c) * 8;
    g.ctx = graph_context(memory, size, true);
    ggml_context* ctx = g.ctx.get();
    g.gf = ggml_new_graph_custom(ctx, size, true);
    g.io = head::build_forward(ctx, g.gf, model.tensors(), c, g.batch, head::Pass::training);

    // The recipe's decision_loss for each record, times its weight: per question, the softmax
    // over its own options (the summary mask keeps each question's row to them; the others are
    // exactly 0, as are their targets), sum over options of (p - target)^2, then weight /
    // n_questions each.
    g.targets = input(ctx, n, nq, "targets");
    g.question_weights = input(ctx, 1, nq, "question_weights");
    // Each question's logits are centered on their mean before the softmax: the softmax does not
    // see the shift (the loss's value is the same), and its gradient then sums to 0 over a
    // question's options up to the rounding of one subtraction. Without it, the softmax
    // backward's rounding (p (g - p.g) summed, with sum(p) = 1 - eps) leaves ~1e-8 on parameters
    // whose true gradient is 0 (residual_scorer.3.bias adds one number to every option), which
    // AdamW's normalization turns into steps of order lr (tests/data/oracle/tune/README.md).
    g.own = input(ctx, n, nq, "own_options");
    g.inv_count = input(ctx, 1, nq, "inverse_option_counts");
    ggml_tensor* logits =
        ggml_repeat(ctx, ggml_reshape_2d(ctx, g.io.logits, n, 1), g.targets);  // [N, nq]
    ggml_tensor* mean =
        ggml_mul(ctx, ggml_sum_rows(ctx, ggml_mul(ctx, logits, g.own)), g.inv_count);
    ggml_tensor* probs =
        ggml_soft_max_ext(ctx, ggml_sub(ctx, logits, mean), g.io.summary_mask, 1.0f, 0.0f);
    g.brier = ggml_sum_rows(ctx, ggml_sqr(ctx, ggml_sub(ctx, probs, g.targets)));
    ggml_set_output(g.brier);
    ggml_tensor* loss = ggml_sum(ctx, ggml_mul(ctx, g.brier, g.question_weights));
    ggml_set_loss(loss);
    ggml_build_forward_expand(g.gf, loss);

    std::vector<ggml_tensor*> accumulators(static_cast<std::size_t>(ggml_graph_n_nodes(g.gf)),
                                           nullptr);
    for (int i = 0; i < ggml_graph_n_nodes(g.gf); ++i) {
      const auto it = grad_of.find(ggml_graph_node(g.gf, i));
      if (it != grad_of.end()) accumulators[static_cast<std::size_t>(i)] = it->second;
    }
    ggml_build_backward_expand(ctx, g.gf, accumulators.data());
    g.seed = ggml_graph_get_grad_acc(g.gf, loss);
    ggml_set_input(g.seed);
    return g;
  }

  /// The sum of squares of every gradient (ggml_sum accumulates in double on the CPU).
  static ggml_tensor* norm(ggml_context* ctx, ggml_cgraph* gf,
                           const std::vector<ggml_tensor*>& grads) {
    ggml_tensor* total = nullptr;
    for (ggml_tensor* g : grads) {
      ggml_tensor* sq = ggml_sum(ctx, ggml_sqr(ctx, g));
      total = total == nullptr ? sq : ggml_add(ctx, total, sq);
    }
    ggml_set_output(total);
    ggml_build_forward_expand(gf, total);
    return total;
  }

  /// AdamW over every parameter, the gradients multiplied by `clip` first when it is given.
  /// Returns the [7] input of ggml_opt_step_adamw's parameters.
  static ggml_tensor* optimizer(ggml_context* ctx, ggml_cgraph* gf, const Impl& s,
                                ggml_tensor* clip);
};

std::vector<std::string> HeadTrainer::unsupported_ops() const {
  // Two records (the batch's masks), each with a question of every type: every op a training
  // graph holds, then the norm's and the optimizer's (a binding clip included).
  const std::vector<head::HeadQuestion> questions = head::every_op_questions();
  const head::BatchRecord records[] = {{head::kEveryOpTokens, questions},
                                       {head::kEveryOpTokens, questions}};
  std::vector<std::uint8_t> memory;
  const TrainingGraph g = Graphs::training(impl_->model, impl_->grad_of, records, memory);
  const std::size_t size = impl_->model.parameters().size() * 8 + 16;
  std::vector<std::uint8_t> norm_memory;
  ggml_context_ptr norm_ctx = graph_context(norm_memory, size, false);
  ggml_cgraph* norm = ggml_new_graph_custom(norm_ctx.get(), size, false);
  Graphs::norm(norm_ctx.get(), norm, impl_->grads.tensors);
  std::vector<std::uint8_t> optimizer_memory;
  ggml_context_ptr opt_ctx = graph_context(optimizer_memory, size, false);
  ggml_cgraph* optimizer = ggml_new_graph_custom(opt_ctx.get(), size, false);
  Graphs::optimizer(opt_ctx.get(), optimizer, *impl_,
                    input(opt_ctx.get(), 1, 1, "clip_coefficient"));
  std::vector<std::string> out;
  for (const ggml_cgraph* gf : {g.gf, norm, optimizer})
    head::add_unsupported_ops(impl_->backend.get(), gf, out);
  return out;
}

std::vector<double> HeadTrainer::accumulate(std::span<const HeadExample> examples,
                                            std::span<const double> weights) {
  Impl& s = *impl_;
  const head::HeadConfig& c = s.model.config();
  if (examples.empty() || weights.size() != examples.size()) {
    throw internal(std::to_string(weights.size()) + " weights for " +
                   std::to_string(examples.size()) + " records");
  }
  if (examples.size() > 1 && !s.batch_graphs) {
    // One graph per record on a device (see batch_graphs).
    std::vector<double> losses;
    for (std::size_t r = 0; r < examples.size(); ++r)
      losses.push_back(accumulate(examples.subspan(r, 1), weights.subspan(r, 1)).front());
    return losses;
  }
  std::vector<head::BatchRecord> records;
  for (const HeadExample& e : examples) {
    pack(e, c, true);  // sizes and targets checked per record
    records.push_back({e.n_tokens, e.questions});
  }
  TrainingGraph g = Graphs::training(s.model, s.grad_of, records, s.graph_memory);
  const head::PackedBatch& b = g.batch;
  const head::GraphIo& io = g.io;
  ggml_cgraph* gf = g.gf;
  const std::int64_t n = b.all.n_options;
  const std::int64_t nq = b.all.n_questions;

  s.allocate(gf, Impl::training);
  std::vector<std::span<const float>> hidden;
  std::vector<float> lexical;
  lexical.reserve(static_cast<std::size_t>(n * c.hidden_size));
  for (const HeadExample& e : examples) {
    hidden.push_back(e.hidden);
    lexical.insert(lexical.end(), e.lexical.begin(), e.lexical.end());
  }
  head::set_inputs(io, b, hidden, lexical);
  // Targets in the [N, n_questions] layout of the softmax (0 outside each question's options);
  // an unlabeled question weighs 0, a record's labeled ones its weight / (labeled questions).
  std::vector<float> t(static_cast<std::size_t>(n * nq), 0.0f);
  std::vector<float> w(static_cast<std::size_t>(nq), 0.0f);
  std::vector<float> own_options(static_cast<std::size_t>(n * nq), 0.0f);
  std::vector<float> inverse_counts(static_cast<std::size_t>(nq), 0.0f);
  std::vector<std::size_t> labeled(examples.size(), 0);
  std::size_t q_all = 0;
  std::size_t o = 0;
  for (std::size_t r = 0; r < examples.size(); ++r) {
    const HeadExample& e = examples[r];
    for (const auto& q : e.targets) labeled[r] += q.empty() ? 0 : 1;
    for (std::size_t q = 0; q < e.questions.size(); ++q, ++q_all) {
      const std::size_t n_options = e.questions[q].options.size();
      const std::size_t row = q_all * static_cast<std::size_t>(n);
      if (!e.targets[q].empty()) {
        w[q_all] = static_cast<float>(weights[r] / static_cast<double>(labeled[r]));
        for (std::size_t j = 0; j < n_options; ++j) t[row + o + j] = e.targets[q][j];
      }
      for (std::size_t j = 0; j < n_options; ++j) own_options[row + o + j] = 1.0f;
      inverse_counts[q_all] = 1.0f / static_cast<float>(n_options);
      o += n_options;
    }
  }
  ggml_backend_tensor_set(g.targets, t.data(), 0, t.size() * sizeof(float));
  ggml_backend_tensor_set(g.question_weights, w.data(), 0, w.size() * sizeof(float));
  ggml_backend_tensor_set(g.own, own_options.data(), 0, own_options.size() * sizeof(float));
  ggml_backend_tensor_set(g.inv_count, inverse_counts.data(), 0,
                          inverse_counts.size() * sizeof(float));
  const float one = 1.0f;
  ggml_backend_tensor_set(g.seed, &one, 0, sizeof(float));
  s.compute(gf);

  const std::vector<float> per_question = read_values(g.brier);
  std::vector<double> losses(examples.size(), 0.0);
  q_all = 0;
  for (std::size_t r = 0; r < examples.size(); ++r) {
    for (const auto& q : examples[r].targets) {
      if (!q.empty()) losses[r] += per_question[q_all];
      ++q_all;
    }
    losses[r] /= static_cast<double>(labeled[r]);
  }
  return losses;
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
  const std::vector<float> flat = read_values(io.logits);
  std::vector<std::vector<float>> out;
  std::size_t k = 0;
  for (const auto& q : e.questions) {
    out.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(k),
                     flat.begin() + static_cast<std::ptrdiff_t>(k + q.options.size()));
    k += q.options.size();
  }
  return out;
}

ggml_tensor* HeadTrainer::Graphs::optimizer(ggml_context* ctx, ggml_cgraph* gf, const Impl& s,
                                            ggml_tensor* clip) {
  const auto& params = s.model.parameters();
  ggml_tensor* adamw = input(ctx, 7, 1, "adamw_params");
  for (std::size_t i = 0; i < params.size(); ++i) {
    // A clip that does not bind (coefficient 1) multiplies by 1: the gradient goes as it is.
    ggml_tensor* g = clip != nullptr ? ggml_mul(ctx, s.grads.tensors[i], clip) : s.grads.tensors[i];
    ggml_build_forward_expand(
        gf, ggml_opt_step_adamw(ctx, params[i].tensor, g, s.m.tensors[i], s.v.tensors[i], adamw));
  }
  return adamw;
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
    ggml_tensor* total = Graphs::norm(ctx.get(), gf, s.grads.tensors);
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
    ggml_tensor* clip = coefficient < 1.0f ? input(ctx.get(), 1, 1, "clip_coefficient") : nullptr;
    ggml_tensor* adamw = Graphs::optimizer(ctx.get(), gf, s, clip);
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
  return read_values(impl_->grads.tensors[impl_->index_of(name)]);
}

head::HeadWeights HeadTrainer::weights() const {
  const auto specs = head::head_parameter_specs(config());
  head::HeadWeights::TensorMap tensors;
  const auto& params = impl_->model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    tensors.emplace(params[i].name,
                    head::HeadTensor{specs[i].shape, read_values(params[i].tensor)});
  }
  return head::HeadWeights::from_tensors(config(), std::move(tensors), std::nullopt,
                                         "the tuned head");
}

namespace {

ggml_tensor* slot_tensor(const HeadTrainer::Slot slot, std::size_t i,
                         const std::vector<head::HeadModel::NamedTensor>& params,
                         const std::vector<ggml_tensor*>& m, const std::vector<ggml_tensor*>& v) {
  if (i >= params.size()) throw internal("no parameter " + std::to_string(i));
  switch (slot) {
    case HeadTrainer::Slot::weights:
      return params[i].tensor;
    case HeadTrainer::Slot::exp_avg:
      return m[i];
    case HeadTrainer::Slot::exp_avg_sq:
      return v[i];
  }
  throw internal("unknown slot");
}

}  // namespace

std::vector<float> HeadTrainer::read(Slot slot, std::size_t i) const {
  return read_values(
      slot_tensor(slot, i, impl_->model.parameters(), impl_->m.tensors, impl_->v.tensors));
}

void HeadTrainer::write(Slot slot, std::size_t i, std::span<const float> values) {
  ggml_tensor* t =
      slot_tensor(slot, i, impl_->model.parameters(), impl_->m.tensors, impl_->v.tensors);
  if (static_cast<std::int64_t>(values.size()) != ggml_nelements(t)) {
    throw Error(ErrorKind::invalid_request, "invalid_request",
                "parameter " + impl_->model.parameters()[i].name + " holds " +
                    std::to_string(ggml_nelements(t)) + " values, not " +
                    std::to_string(values.size()));
  }
  ggml_backend_tensor_set(t, values.data(), 0, values.size() * sizeof(float));
}

std::int64_t HeadTrainer::steps() const noexcept {
  return impl_->step;
}

void HeadTrainer::set_steps(std::int64_t steps) {
  if (steps < 0) throw internal("a negative step count");
  impl_->step = steps;
}

std::size_t HeadTrainer::graph_bytes() const {
  std::size_t bytes = 0;
  for (const auto& a : impl_->allocators) bytes += ggml_gallocr_get_buffer_size(a.get(), 0);
  return bytes;
}

}  // namespace clef::tune
