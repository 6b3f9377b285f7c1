#pragma once
// A `clef tune` run's checkpoint, written after every epoch into OUT/checkpoint/: the head
// (F32), AdamW's moments and step, the best head so far and the run's history. Written beside the
// last one and swapped in by renames, so an interrupted write (Ctrl-C, a crash) leaves the last
// complete checkpoint; `--resume` continues from it bit for bit (the epoch's batches are drawn from
// the seed and the epoch number, nothing else). Heads go to and from files tensor by tensor, from
// and into the trainer's own buffers: a run holds no whole copy of the head besides the trainer's
// four (weights, gradients, two moments).

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "head/head_config.hpp"
#include "head/head_weights.hpp"
#include "json/value.hpp"
#include "tune/head_trainer.hpp"

namespace clef::tune {

/// One value a resumed run must share with its checkpoint, named as the user gives it
/// ({"--lr", "0.003000000000"}, {"--data (sha256)", hex}).
using FingerprintPart = std::pair<std::string, std::string>;
using FingerprintParts = std::vector<FingerprintPart>;

/// What a checkpoint holds besides its tensors (state.json).
struct CheckpointState {
  int epoch = 0;            ///< epochs complete
  std::string fingerprint;  ///< of the data and settings: a resume with others is refused
  std::int64_t step = 0;    ///< optimizer steps taken
  int best_epoch = 0;       ///< 0: the initial head
  json::Value history;      ///< the epochs' reports so far (tune_report.json's "epochs")
  /// The fingerprint's values by name, to say which differ (empty: a checkpoint written before
  /// they were kept).
  FingerprintParts fingerprint_parts;
};

/// OUT/checkpoint.
std::filesystem::path checkpoint_dir(const std::filesystem::path& out);

/// The best head of the last complete checkpoint (F32, the reference's names).
std::filesystem::path checkpoint_best_head(const std::filesystem::path& out);

/// Writes a checkpoint of `trainer` (weights, moments) and `state` to checkpoint_dir(out),
/// replacing the previous one only once the new one is whole. The best head: the trainer's
/// weights when `best_is_current`, else the last checkpoint's (linked, not copied, where the file
/// system can). Throws clef::Error (invalid_request, field "out") when it cannot be written, and
/// (internal) for a best head kept in no checkpoint.
void write_checkpoint(const std::filesystem::path& out, const CheckpointState& state,
                      const HeadTrainer& trainer, bool best_is_current);

/// The state of the last complete checkpoint in `out` (its tensor files checked against its
/// config), or nullopt when there is none. Throws clef::Error (invalid_request, field "resume")
/// when one is there but cannot be read.
std::optional<CheckpointState> read_checkpoint(const std::filesystem::path& out);

/// Loads the last complete checkpoint's weights, moments and step into `trainer` (a head of its
/// config). Throws as read_checkpoint.
void restore_checkpoint(const std::filesystem::path& out, HeadTrainer& trainer);

/// Sets `trainer`'s weights from the head file `file` (F32, F16 or BF16; the reference's names
/// and shapes), one tensor at a time. Throws clef::Error (invalid_request, field "head") naming
/// the file and the tensor that is missing or of another shape.
void load_weights(HeadTrainer& trainer, const std::filesystem::path& file);

/// Writes `weights` as the reference loader reads it: `dir`/joint_head.safetensors (F32, or BF16
/// with `bf16`; the state_dict's names, the three scalars 0-D) and `dir`/joint_head_config.json.
/// Throws clef::Error (invalid_request, field "out") on I/O failure.
void write_head(const std::filesystem::path& dir, const head::HeadWeights& weights, bool bf16,
                const std::vector<std::pair<std::string, std::string>>& metadata = {});

/// write_head from the head file `source` (a head of `config`), one tensor at a time.
void write_head(const std::filesystem::path& dir, const std::filesystem::path& source,
                const head::HeadConfig& config, bool bf16,
                const std::vector<std::pair<std::string, std::string>>& metadata = {});

/// Parameters that differ between the head files `initial` and `tuned` (of `config`), and how
/// many of those round to the same BF16 (what --dtype bf16 rounds away), one tensor at a time.
std::pair<std::size_t, std::size_t> rounded_away(const std::filesystem::path& initial,
                                                 const std::filesystem::path& tuned,
                                                 const head::HeadConfig& config);

}  // namespace clef::tune
