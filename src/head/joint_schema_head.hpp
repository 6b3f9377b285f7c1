#pragma once
// clef::head::JointSchemaHead: the joint schema head's forward pass (decision contract,
// section 5; reference JointSchemaHead.forward), built as one ggml graph and run on a ggml
// backend (the CPU backend by default). All math is f32 with f32 weights.

#include <ggml-cpp.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "head/head_config.hpp"
#include "head/head_graph.hpp"
#include "head/head_model.hpp"
#include "head/head_weights.hpp"

namespace clef::head {

/// The head's compute over its weights (a HeadModel: one backend buffer, uploaded once, which
/// several heads may share, as the runners of one loaded model do). forward() reuses one graph
/// allocator across calls; it is not thread-safe (one call at a time), but heads sharing one
/// HeadModel may run on different threads (the weights are only read).
class JointSchemaHead {
 public:
  /// On the ggml CPU backend with `n_threads` threads (>= 1), its weights uploaded from `weights`.
  JointSchemaHead(const HeadWeights& weights, int n_threads);
  /// On `backend` (owned), its weights uploaded from `weights` into the backend's buffer type.
  JointSchemaHead(const HeadWeights& weights, ggml_backend_ptr backend,
                  const device::Quirks& quirks = {});
  /// On `backend` (owned) over weights already uploaded (`model`, shared; they must sit in a
  /// buffer `backend` can read: the CPU's, or its own device's). Throws clef::Error (internal)
  /// for a null model or backend. The backend must support the ops used (see head_graph_ops.hpp).
  /// A compute buffer a larger record outgrows is freed by ggml's graph allocator, or with
  /// `quirks`.stale_descriptor_reads kept until the head is destroyed (after its backend), the
  /// larger one reserved for twice the tokens (the next power of two), so a growing stream of
  /// records holds at most about twice the largest buffer.
  JointSchemaHead(std::shared_ptr<const HeadModel> model, ggml_backend_ptr backend,
                  const device::Quirks& quirks = {});
  /// On the ggml CPU backend with `n_threads` threads (>= 1) over weights in a CPU buffer.
  JointSchemaHead(std::shared_ptr<const HeadModel> model, int n_threads);
  ~JointSchemaHead();
  JointSchemaHead(JointSchemaHead&&) noexcept;
  JointSchemaHead& operator=(JointSchemaHead&&) noexcept;

  const HeadConfig& config() const noexcept;
  /// The weights it runs, to share with another head (on the same device's backend).
  std::shared_ptr<const HeadModel> model() const noexcept;

  /// The ops of the head's graph (ggml_op_desc names, each once) that its backend cannot run:
  /// empty on the CPU. A GPU backend without one of them cannot hold the head.
  std::vector<std::string> unsupported_ops();

  /// The backend's name ("CPU", "CUDA0", ...).
  std::string backend_name() const;

  /// Logits of every question, in `questions` order, each in its option order.
  ///  - `hidden`: the backbone's final-norm hidden states, [n_tokens, hidden_size] row-major f32;
  ///    row n_tokens-1 is the global token;
  ///  - `questions`: non-empty; every span non-empty and inside [0, n_tokens); types 0..2;
  ///  - `lexical`: [N_options, hidden_size] row-major, one row per option in record order
  ///    (questions in order, then options), row o = mean of output.weight rows over the option
  ///    span's ids (contract 5.3; not normalized).
  /// Throws clef::Error (internal) for inconsistent sizes or spans.
  std::vector<std::vector<float>> forward(std::span<const float> hidden, std::int64_t n_tokens,
                                          std::span<const HeadQuestion> questions,
                                          std::span<const float> lexical);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clef::head
