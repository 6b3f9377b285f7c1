#pragma once
// The state cache: what a prefill of a record's first tokens left behind (the backbone memory and
// the final-norm hidden rows of those tokens), kept so a later record that starts with the same
// tokens and images resumes from it instead of prefilling them again (issue 11, section 1).

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backbone/memory_snapshot.hpp"

namespace clef::cache {

/// A record prefix with what its prefill left: the first ids.size() tokens of some record.
struct CachedPrefix {
  std::vector<std::int32_t> ids;  ///< the prefix's token ids
  /// SHA-256 (image_digest) of every image whose block starts inside the prefix, in order: image
  /// blocks are all image-pad ids, so the ids alone do not say which pixels they were.
  std::vector<std::string> image_digests;
  backbone::MemorySnapshot memory;  ///< memory.tokens == ids.size()
  /// Recurrent-only checkpoints (backbone::MemorySnapshot::partial) at layout boundaries before
  /// ids.size(), ascending: a record that shares only the first c tokens resumes from `memory`
  /// cut back to checkpoint c (an edited or extended state).
  /// Shared: a record that resumed from one of them keeps the same ones, not copies.
  std::vector<std::shared_ptr<const backbone::MemorySnapshot>> checkpoints;
  std::vector<float> rows;  ///< ids.size() x n_embd final-norm hidden rows
  /// Bytes the entry holds (ids, digests, memory, checkpoints, rows; a checkpoint shared with
  /// another entry is counted in both, so the budget is never exceeded).
  std::size_t bytes() const noexcept;
};

/// Counters of a StateCache since it was made (the server's /metrics).
struct StateCacheStats {
  std::uint64_t hits = 0;           ///< lookups that found a prefix
  std::uint64_t prefix_hits = 0;    ///< of those, ones that found only the fixed system prefix
  std::uint64_t misses = 0;         ///< lookups that found none
  std::uint64_t reused_tokens = 0;  ///< tokens of the prefixes found
  std::uint64_t insertions = 0;
  std::uint64_t evictions = 0;  ///< entries dropped for the budget (least recently used first)
  std::uint64_t entries = 0;    ///< entries held now
  std::uint64_t bytes = 0;      ///< bytes held now
  std::uint64_t budget = 0;     ///< the byte budget (0: the cache is off)
};

/// What a lookup found: resume `entry`'s memory, cut back to `checkpoint` when that is set, and
/// the first `tokens` rows.
struct CacheHit {
  std::shared_ptr<const CachedPrefix> entry;  ///< null: a miss
  int tokens = 0;                             ///< entry->ids.size() or checkpoint->tokens
  const backbone::MemorySnapshot* checkpoint = nullptr;  ///< one of entry->checkpoints, or null
  explicit operator bool() const noexcept { return entry != nullptr; }
};

/// Cached record prefixes, least recently used evicted first to stay within a byte budget. One
/// cache belongs to one loaded model (its memory snapshots fit only that model's context).
/// Thread-safe (one mutex; lookups and insertions come from the deciding thread, stats() from
/// any).
class StateCache {
 public:
  /// `budget_bytes` 0: nothing is ever kept (every lookup a miss, nothing counted).
  explicit StateCache(std::size_t budget_bytes);

  bool enabled() const noexcept { return budget_ > 0; }
  std::size_t budget() const noexcept { return budget_; }

  /// The longest cached prefix of the record `ids` that ends at one of `boundaries` (the batch
  /// boundaries of the record's own prefill layout, ascending): a whole entry whose ids start the
  /// record, or an entry's checkpoint at c where the record and the entry agree on the first c
  /// ids. Images that start inside the prefix (`image_starts`: each image block's first token,
  /// ascending, one per digest) must have the entry's digests. Marks the entry most recently used
  /// and counts a hit; a miss when none matches. The entry stays valid for the caller even if it
  /// is evicted.
  /// `fixed_prefix`: the record's fixed-prefix tokens (every record of its kind shares them): a
  /// hit no longer than it also counts as a prefix hit.
  CacheHit find(std::span<const std::int32_t> ids, std::span<const int> boundaries,
                std::span<const std::size_t> image_starts,
                std::span<const std::string> image_digests, int fixed_prefix = 0);

  /// True when a prefix with these ids and digests is held (no counters change).
  bool contains(std::span<const std::int32_t> ids,
                std::span<const std::string> image_digests) const;

  /// Keeps `entry` (unless an equal one is held or it alone is over the budget), evicting least
  /// recently used entries until the budget holds.
  void insert(CachedPrefix entry);

  StateCacheStats stats() const;

 private:
  using Entry = std::shared_ptr<const CachedPrefix>;
  bool holds(std::span<const std::int32_t> ids, std::span<const std::string> digests) const;

  std::size_t budget_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  ///< most recently used first
  StateCacheStats stats_;
};

/// SHA-256 of an image as the tower takes it: its size (width, height) and RGB bytes. Lower-case
/// hex.
std::string image_digest(int width, int height, std::span<const std::uint8_t> rgb);

}  // namespace clef::cache
