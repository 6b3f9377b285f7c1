#pragma once
// What a prefill gives back: the final-norm hidden states of a record and the backbone memory
// snapshots taken on the way (plain data; the state cache keeps them, the joint schema head reads
// the rows).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "util/uninitialized_allocator.hpp"

namespace clef::backbone {

/// A snapshot's bytes: sized, then written whole by llama.cpp (so not cleared first).
using SnapshotBytes = std::vector<std::uint8_t, util::UninitializedAllocator<std::uint8_t>>;

/// The backbone memory of one sequence after its first `tokens` tokens: the attention KV of the
/// full-attention layers and the conv / recurrent states of the Gated DeltaNet layers, as
/// llama_state_seq_get_data writes them (bit-identical when set back: llama-probes.md section 3).
struct MemorySnapshot {
  int tokens = 0;
  SnapshotBytes data;  ///< llama_state_seq_get_data's bytes
  /// Only the Gated DeltaNet conv / recurrent states (LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY): a
  /// checkpoint taken on the way to a full snapshot of the same record, resumed on top of it.
  bool partial = false;
};

/// Final-norm hidden states of a record: `rows` x `n_embd` floats, row-major (row t = token t).
struct HiddenStates {
  int rows = 0;
  int n_embd = 0;
  std::vector<float> data;
  /// The memory after each PrefillOptions::snapshot_at point, in that order.
  std::vector<MemorySnapshot> snapshots;
  /// The recurrent states after each PrefillOptions::checkpoint_at point (partial), in that order.
  std::vector<MemorySnapshot> checkpoints;
  /// The latest progress snapshot (PrefillOptions::progress_every) of a prefill that did not
  /// finish: what a cancelled prefill leaves to resume from. Empty (tokens 0) otherwise.
  MemorySnapshot progress;

  std::span<const float> row(int t) const {
    return {data.data() + static_cast<std::size_t>(t) * n_embd, static_cast<std::size_t>(n_embd)};
  }
};

}  // namespace clef::backbone
