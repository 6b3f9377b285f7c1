#include "head/joint_schema_head.hpp"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "head/head_graph.hpp"
#include "head/head_model.hpp"
#include "util/error.hpp"

namespace clef::head {

namespace {

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
  std::shared_ptr<const HeadModel> model;  ///< the weights, shared with other heads
  bool keep_outgrown;                      ///< device::Quirks::stale_descriptor_reads
  ggml_gallocr_ptr allocator;
  std::vector<ggml_gallocr_ptr> outgrown;  ///< kept buffers (keep_outgrown)
  std::vector<std::uint8_t> graph_memory;  ///< reused ggml context memory (tensor metadata only)

  Impl(std::shared_ptr<const HeadModel> m, ggml_backend_ptr b, bool keep)
      : backend(std::move(b)),
        model(std::move(m)),
        keep_outgrown(keep),
        allocator(new_allocator(backend.get())) {}

  /// The backend goes first, then the buffers (weights unless shared, compute, kept): no device
  /// memory is freed while the backend that dispatched over it lives
  /// (device::Quirks::stale_descriptor_reads).
  ~Impl() { backend.reset(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  std::size_t graph_size() const { return forward_graph_size(model->config()); }

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
    g.io = build_forward(g.ctx.get(), g.gf, model->tensors(), model->config(), n_tokens, p);
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

JointSchemaHead::JointSchemaHead(std::shared_ptr<const HeadModel> model, int n_threads)
    : JointSchemaHead(std::move(model), cpu_backend(n_threads)) {}

JointSchemaHead::JointSchemaHead(const HeadWeights& weights, ggml_backend_ptr backend,
                                 const device::Quirks& quirks) {
  if (!backend) throw Error(ErrorKind::internal, "internal", "joint schema head: no backend");
  // Uploaded here, not in a delegating call: the backend must not be moved from before.
  auto model = std::make_shared<const HeadModel>(weights, backend.get());
  impl_ =
      std::make_unique<Impl>(std::move(model), std::move(backend), quirks.stale_descriptor_reads);
}

JointSchemaHead::JointSchemaHead(std::shared_ptr<const HeadModel> model, ggml_backend_ptr backend,
                                 const device::Quirks& quirks) {
  if (!backend) throw Error(ErrorKind::internal, "internal", "joint schema head: no backend");
  if (!model) throw Error(ErrorKind::internal, "internal", "joint schema head: no weights");
  impl_ =
      std::make_unique<Impl>(std::move(model), std::move(backend), quirks.stale_descriptor_reads);
}

JointSchemaHead::~JointSchemaHead() = default;
JointSchemaHead::JointSchemaHead(JointSchemaHead&&) noexcept = default;
JointSchemaHead& JointSchemaHead::operator=(JointSchemaHead&&) noexcept = default;

const HeadConfig& JointSchemaHead::config() const noexcept {
  return impl_->model->config();
}

std::shared_ptr<const HeadModel> JointSchemaHead::model() const noexcept {
  return impl_->model;
}

std::vector<std::string> JointSchemaHead::unsupported_ops() {
  std::vector<std::uint8_t> memory;
  const BuiltGraph g =
      impl_->build(kEveryOpTokens, pack_record(kEveryOpTokens, every_op_questions()), memory);
  std::vector<std::string> out;
  add_unsupported_ops(impl_->backend.get(), g.gf, out);
  return out;
}

std::string JointSchemaHead::backend_name() const {
  return ggml_backend_name(impl_->backend.get());
}

std::vector<std::vector<float>> JointSchemaHead::forward(std::span<const float> hidden,
                                                         std::int64_t n_tokens,
                                                         std::span<const HeadQuestion> questions,
                                                         std::span<const float> lexical) {
  const HeadConfig& c = impl_->model->config();
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
  set_inputs(io, p, hidden, lexical);
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
