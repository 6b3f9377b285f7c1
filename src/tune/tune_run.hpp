#pragma once
// One `clef tune` training run over rows already kept (tune/frozen_rows.hpp): epochs of seeded
// batches through HeadTrainer, validation before training and after every epoch, the best epoch
// by validation Brier kept, early stopping, a checkpoint after every epoch.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "head/head_weights.hpp"
#include "json/value.hpp"
#include "tune/checkpoint.hpp"
#include "tune/frozen_rows.hpp"
#include "tune/head_trainer.hpp"
#include "tune/tune_metrics.hpp"

namespace clef::tune {

/// The run's settings. Defaults for head-only training on a few hundred records (measured in
/// docs/performance.md, "clef tune"); the recipe's own (lr 1e-5) are for 16k records and a head
/// trained with its backbone.
struct TuneSettings {
  AdamWSettings adamw{3e-3, 0.9, 0.999, 1e-8, 0.0};
  int batch_size = 8;
  int epochs = 40;
  /// Stop after this many epochs without a better validation Brier, once half the epochs have
  /// run (0: never stop early).
  int patience = 10;
  double max_grad_norm = 1.0;
  std::uint64_t seed = 0;
  /// The learning rate over the run: constant, or cosine from `adamw.lr` at the first step down
  /// to 0.1 x it at the last step of the last epoch.
  enum class Schedule { constant, cosine } schedule = Schedule::constant;
  /// The most rows one training graph holds: a batch's records go through the head in graphs of
  /// up to this many rows together (a longer record in a graph of its own), so that the
  /// backward's weight-sized work is shared by them (HeadTrainer::accumulate over a span). The
  /// gradients are the same up to rounding; the memory of a graph grows with its rows.
  std::int64_t graph_rows = 8192;
};

/// The learning rate of optimizer step `step` (0-based) of `total_steps`.
double learning_rate(const TuneSettings& settings, std::int64_t step, std::int64_t total_steps);

/// Where a run is, for a progress display.
struct TuneProgress {
  int epoch = 0;  ///< 1-based
  int epochs = 0;
  std::size_t records_done = 0;  ///< training records this epoch
  std::size_t records = 0;
  double records_per_second = 0;
  double eta_seconds = 0;  ///< to the last epoch (early stopping may end sooner)
};

/// One epoch's outcome (epoch 0: the initial head, before training).
struct EpochReport {
  int epoch = 0;
  double train_loss = 0;  ///< mean of the batches' losses (before each step); 0 for epoch 0
  TuneMetrics validation;
  double seconds = 0;
  double records_per_second = 0;
  std::int64_t step = 0;  ///< optimizer steps taken so far

  json::Value to_json() const;
  static EpochReport from_json(const json::Value& v);
};

struct TuneOutcome {
  std::vector<EpochReport> epochs;  ///< epoch 0 first
  /// By validation Brier among the trained epochs (>= 1; 0 only when none ran). Whether it is
  /// better than the initial head: improved().
  int best_epoch = 0;  ///< its head: the checkpoint's best head (tune/checkpoint.hpp)
  bool stopped_early = false;
  bool interrupted = false;  ///< `interrupted()` said so: the last complete checkpoint stays

  /// The best trained epoch validates better (a lower Brier) than the initial head.
  bool improved() const {
    return best_epoch >= 1 && epochs[static_cast<std::size_t>(best_epoch)].validation.brier <
                                  epochs.front().validation.brier;
  }
};

/// The training order of epoch `epoch` (1-based): a permutation of 0..n-1 drawn from `seed` and
/// the epoch number alone (so a resumed run draws the same batches).
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, int epoch);

/// The labeled questions of `records` scored by `trainer`'s current head.
std::vector<ScoredLabel> score(HeadTrainer& trainer, const std::vector<RowsRecord>& records);

/// Training record `index` as visit `epoch` (1-based) shows it: its kept rows (shared, not
/// copied), or an augmented copy whose rows were computed for the visit (tune/augment.hpp).
using TrainingVisit = std::function<RowsRecord(std::size_t index, int epoch)>;

/// Trains `trainer` on `n_train` records given by `visit`, validating on `validation`
/// (non-empty). `resume_from`: a checkpoint to continue (its weights and optimizer already
/// restored into `trainer`), else nullopt. `checkpoint(state, best_is_current)` is called after
/// every epoch (best_is_current: that epoch is the best so far, its head the trainer's weights);
/// `interrupted()` is asked between batches; `on_progress` after every batch.
TuneOutcome run_training(HeadTrainer& trainer, std::size_t n_train, const TrainingVisit& visit,
                         const std::vector<RowsRecord>& validation, const TuneSettings& settings,
                         const std::string& fingerprint, std::optional<CheckpointState> resume_from,
                         const std::function<void(const CheckpointState&, bool)>& checkpoint,
                         const std::function<bool()>& interrupted,
                         const std::function<void(const TuneProgress&)>& on_progress);

}  // namespace clef::tune
