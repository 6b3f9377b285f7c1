#pragma once
// clef::tune::HeadTrainer: the published training recipe's step for the joint schema head alone,
// on ggml (its backward pass and its AdamW op): the recipe's decision_loss (Brier per question,
// averaged over a record's questions, then over the batch's records), gradients of every head
// parameter, global-norm clipping (_clip_gradients) and torch's AdamW. Checked against the
// authors' JointSchemaHead under torch autograd: tests/data/oracle/tune/README.md.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ggml-cpp.h>

#include "head/head_graph.hpp"
#include "head/head_weights.hpp"

namespace clef::tune {

/// One labeled record as the head sees it (what the frozen backbone gave, and the labels).
struct HeadExample {
  std::span<const float> hidden;  ///< [n_tokens, hidden_size] row-major, final-norm hidden states
  std::int64_t n_tokens = 0;
  std::span<const head::HeadQuestion> questions;  ///< record order, options in model order
  std::span<const float> lexical;  ///< [N_options, hidden_size], options in record order
  /// Per question, one probability per option (model order), each summing to 1; empty for a
  /// question without a label (it passes through the head, its loss is not counted).
  std::span<const std::vector<float>> targets;
};

/// torch.optim.AdamW's settings (decoupled weight decay, torch's bias correction).
struct AdamWSettings {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

/// What one optimizer step did.
struct StepReport {
  double grad_norm = 0;         ///< global L2 norm of the accumulated gradients, before clipping
  double clip_coefficient = 1;  ///< min(1, max_norm / (grad_norm + 1e-6)) applied to every one
  std::int64_t step = 0;  ///< optimizer steps taken so far (torch's `step`), this one included
};

/// The head's parameters, their gradient accumulators and AdamW moments (4 copies of the head in
/// f32) on the ggml CPU backend. Not thread-safe.
class HeadTrainer {
 public:
  /// Starts from `initial` (raw scalars, as joint_head.safetensors holds them; a folded head
  /// cannot be trained: clef::Error invalid_request). `n_threads` >= 1.
  HeadTrainer(const head::HeadWeights& initial, int n_threads);

  /// A head of `config` (raw scalars) whose weights are all 0, to be set with write (or
  /// tune::load_weights, tensor by tensor from a file). Throws clef::Error for an invalid config.
  HeadTrainer(const head::HeadConfig& config, int n_threads);

  /// A zero head of `config` on `backend` (a device's: its buffers and graphs there). With
  /// `keep_outgrown` (device::Quirks::stale_descriptor_reads) a compute buffer a larger graph
  /// outgrows is kept until the trainer goes. On a backend other than the CPU a batch's records
  /// go one graph each (accumulate over a span loops). Throws clef::Error (internal) without a
  /// backend.
  HeadTrainer(const head::HeadConfig& config, ggml_backend_ptr backend, bool keep_outgrown);

  /// The ggml backend the trainer runs on ("CPU", "Vulkan0", ...).
  std::string backend_name() const;

  /// The ops of the training, norm and optimizer graphs (ggml_op_desc names, each once) that the
  /// backend cannot run: empty where it trains the head.
  std::vector<std::string> unsupported_ops() const;
  ~HeadTrainer();
  HeadTrainer(HeadTrainer&&) noexcept;
  HeadTrainer& operator=(HeadTrainer&&) noexcept;

  const head::HeadConfig& config() const noexcept;

  /// Forward and backward of one record: adds `weight` x d(loss)/d(parameter) to every
  /// parameter's gradient accumulator, where loss = mean over the record's labeled questions of
  /// sum over options of (softmax(logits) - target)^2. Returns that loss (unweighted). For the
  /// recipe's batch mean, weight = 1 / records in the batch. Throws clef::Error (internal) for
  /// inconsistent sizes (as JointSchemaHead::forward), targets that do not match the options, or
  /// no labeled question.
  double accumulate(const HeadExample& example, double weight);

  /// accumulate for several records in one graph (the same gradients up to the rounding of
  /// products over the batch, and faster: the weight-sized work of the backward over questions
  /// and options is done once, not once per record): adds weights[r] x d(loss_r)/d(parameter).
  /// Returns each record's loss (unweighted). Memory: one graph for all of them. Throws as
  /// accumulate, and clef::Error (internal) for no records or a weight count that differs.
  std::vector<double> accumulate(std::span<const HeadExample> examples,
                                 std::span<const double> weights);

  /// The current head's logits of `example` (its targets unused), as JointSchemaHead::forward.
  std::vector<std::vector<float>> logits(const HeadExample& example);

  /// Clips the accumulated gradients to `max_grad_norm` (global L2 norm; coefficient
  /// min(1, max_grad_norm / (norm + 1e-6))), takes one AdamW step and zeroes the accumulators.
  /// A non-finite norm takes no step (the accumulators are zeroed) and is reported as it is.
  StepReport step(const AdamWSettings& settings, double max_grad_norm);

  /// The accumulated gradient of parameter `name` (torch shape, row-major).
  std::vector<float> gradient(std::string_view name) const;

  /// The current parameters as a head (raw scalars; config unchanged).
  head::HeadWeights weights() const;

  /// What the trainer holds per parameter: the weights and AdamW's two moments.
  enum class Slot { weights, exp_avg, exp_avg_sq };

  /// Parameter `i` (head_parameter_specs order) of `slot`, row-major: one tensor at a time, for a
  /// checkpoint written without a copy of the whole head. Throws clef::Error (internal) for an
  /// `i` out of range.
  std::vector<float> read(Slot slot, std::size_t i) const;

  /// Replaces parameter `i` of `slot` by `values`. Throws clef::Error (invalid_request) when the
  /// count is not the parameter's, (internal) for an `i` out of range.
  void write(Slot slot, std::size_t i, std::span<const float> values);

  /// Optimizer steps taken (torch's `step`); set_steps restores a checkpoint's (>= 0).
  std::int64_t steps() const noexcept;
  void set_steps(std::int64_t steps);

  /// Bytes of the graphs' compute buffers (ggml's graph allocators, each kept at its largest
  /// graph so far; the largest training graph dominates).
  std::size_t graph_bytes() const;

 private:
  struct Impl;
  struct Graphs;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clef::tune
