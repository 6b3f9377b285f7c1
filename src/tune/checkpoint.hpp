#pragma once
// A `clef tune` run's checkpoint, written after every epoch into OUT/checkpoint/: the head
// (F32), AdamW's moments and step, the best head so far and the run's history. Written beside the
// last one and swapped in by renames, so an interrupted write (Ctrl-C, a crash) leaves the last
// complete checkpoint; `--resume` continues from it bit for bit (the epoch's batches are drawn from
// the seed and the epoch number, nothing else).

#include <filesystem>
#include <optional>
#include <string>

#include "head/head_weights.hpp"
#include "json/value.hpp"
#include "tune/head_trainer.hpp"

namespace clef::tune {

struct Checkpoint {
  int epoch = 0;            ///< epochs complete
  std::string fingerprint;  ///< of the data and settings: a resume with others is refused
  head::HeadWeights weights;
  OptimizerState optimizer;
  int best_epoch = 0;  ///< 0: the initial head
  head::HeadWeights best;
  json::Value history;  ///< the epochs' reports so far (tune_report.json's "epochs")
};

/// OUT/checkpoint.
std::filesystem::path checkpoint_dir(const std::filesystem::path& out);

/// Writes `c` to checkpoint_dir(out), replacing the previous one only once the new one is whole.
/// Throws clef::Error (invalid_request, field "out") when it cannot be written.
void write_checkpoint(const std::filesystem::path& out, const Checkpoint& c);

/// The last complete checkpoint in `out`, or nullopt when there is none. Throws clef::Error
/// (invalid_request, field "resume") when one is there but cannot be read.
std::optional<Checkpoint> read_checkpoint(const std::filesystem::path& out);

/// Writes `weights` as the reference loader reads it: `dir`/joint_head.safetensors (F32, or BF16
/// with `bf16`; the state_dict's names, the three scalars 0-D) and `dir`/joint_head_config.json.
/// Throws clef::Error (invalid_request, field "out") on I/O failure.
void write_head(const std::filesystem::path& dir, const head::HeadWeights& weights, bool bf16,
                const std::vector<std::pair<std::string, std::string>>& metadata = {});

}  // namespace clef::tune
