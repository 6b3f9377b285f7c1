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

#include "backbone/backbone.hpp"

namespace clef::cache {

/// A record prefix with what its prefill left: the first ids.size() tokens of some record.
struct CachedPrefix {
  std::vector<std::int32_t> ids;  ///< the prefix's token ids
  /// SHA-256 (image_digest) of every image whose block starts inside the prefix, in order: image
  /// blocks are all image-pad ids, so the ids alone do not say which pixels they were.
  std::vector<std::string> image_digests;
  backbone::MemorySnapshot memory;  ///< memory.tokens == ids.size()
  std::vector<float> rows;          ///< ids.size() x n_embd final-norm hidden rows
  /// Bytes the entry holds (ids, digests, memory, rows).
  std::size_t bytes() const noexcept;
};

/// Counters of a StateCache since it was made (the server's /metrics).
struct StateCacheStats {
  std::uint64_t hits = 0;           ///< lookups that found a prefix
  std::uint64_t misses = 0;         ///< lookups that found none
  std::uint64_t reused_tokens = 0;  ///< tokens of the prefixes found
  std::uint64_t insertions = 0;
  std::uint64_t evictions = 0;  ///< entries dropped for the budget (least recently used first)
  std::uint64_t entries = 0;    ///< entries held now
  std::uint64_t bytes = 0;      ///< bytes held now
  std::uint64_t budget = 0;     ///< the byte budget (0: the cache is off)
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

  /// The longest cached prefix of the record `ids` whose length is one of `points` (the record's
  /// snapshot points, prefix_points.hpp) and whose image digests equal `image_digests[0..k)`, k
  /// the number of the record's images that start inside it (`image_starts`: each image block's
  /// first token, ascending, one per digest). Marks it most recently used and counts a hit; null
  /// (a miss) when none matches. The entry stays valid for the caller even if it is evicted.
  std::shared_ptr<const CachedPrefix> find(std::span<const std::int32_t> ids,
                                           std::span<const int> points,
                                           std::span<const std::size_t> image_starts,
                                           std::span<const std::string> image_digests);

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
