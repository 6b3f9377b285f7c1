#pragma once
// The state cache's policy for the records a runner decides (vLLM's KVCacheManager): where a
// record's prefill layout is cut, which cached prefix it resumes from, which snapshots it takes,
// and what goes into the cache once it is decided or abandoned. The runner only carries out what
// this says; changing cache policy touches this file.

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "cache/state_cache.hpp"
#include "record/record.hpp"

namespace clef::cache {

/// What the state cache gives one record before its prefill (StateCacheManager::plan) and reads
/// back after it. Does not move once planned: `options` points into it.
struct RecordCachePlan {
  std::vector<int> points;                ///< snapshot points cutting the layout
  int state_end = 0;                      ///< the point that keeps the recurrent checkpoints, or 0
  std::vector<std::size_t> image_starts;  ///< first token of each image block, record order
  std::vector<std::string> digests;       ///< each image's digest, record order
  CacheHit hit;                           ///< the prefix it resumes from (empty: none)
  std::vector<int> snapshot_at;
  std::vector<int> checkpoint_at;
  backbone::PrefillOptions options;  ///< what the prefill starts with (Backbone::start)

  /// Tokens resumed from the cache (0: a cold prefill).
  int resumed() const noexcept { return hit.tokens; }
  /// The index of the first image whose block starts after the resumed prefix: the images before
  /// it need no vision-tower rows.
  std::size_t first_image_to_encode() const;
  /// The digests of the images whose blocks start among the first `n` tokens (a prefix's key).
  std::span<const std::string> digests_before(std::size_t n) const;
};

/// The state cache (StateCache) and its policy over a backbone's records. Not thread-safe but
/// stats(): the runner's thread.
class StateCacheManager {
 public:
  /// A cache of `budget_bytes` (0: off) for a backbone of `params` whose hidden rows are
  /// `n_embd` wide; a prefill in progress may hold one progress snapshot every `progress_every`.
  StateCacheManager(std::size_t budget_bytes, const backbone::BackboneParams& params, int n_embd,
                    std::chrono::milliseconds progress_every);

  bool enabled() const noexcept { return cache_.enabled(); }
  StateCacheStats stats() const { return cache_.stats(); }

  /// Plans `rec`'s prefill into `plan` (which must stay put while the prefill runs): the layout
  /// cut at the record's snapshot points where a cache may keep them (with flash attention
  /// always, so that the cache setting changes no answer; without either the cuts would only
  /// make more, smaller batches), the longest cached prefix it resumes from (its resumed rows
  /// and memory), and the snapshots and recurrent checkpoints worth taking after it.
  /// `image_blocks` are its image spans (first_token, n_tokens), `digests` their digests. The
  /// points are placed so that, with flash attention off, the hidden states are the same with or
  /// without them: the answer bytes never depend on the cache.
  void plan(const record::Record& rec, std::span<const backbone::EmbeddingSpan> image_blocks,
            std::span<const std::string> digests, RecordCachePlan& plan);

  /// After `rec`'s decision succeeded: its snapshots (with the recurrent checkpoints at the
  /// state's end, those of the prefix it resumed from included) kept with the rows before them.
  void keep_decided(const record::Record& rec, const RecordCachePlan& plan,
                    backbone::HiddenStates& hidden);

  /// A cancelled prefill (its client went away, e.g. an SDK attempt that timed out and will be
  /// retried) of which `prefilled` tokens were decoded: the snapshots it took and its latest
  /// progress snapshot kept with the rows before them, so the same record resumes there (the
  /// points are batch boundaries of its layout, so its answer is the same bytes as a cold one).
  void keep_abandoned(const record::Record& rec, const RecordCachePlan& plan,
                      backbone::HiddenStates partial, int prefilled);

 private:
  CachedPrefix prefix_entry(const record::Record& rec, const RecordCachePlan& plan,
                            const backbone::HiddenStates& hidden,
                            backbone::MemorySnapshot memory) const;

  StateCache cache_;
  backbone::BackboneParams params_;
  int n_embd_ = 0;
  std::chrono::milliseconds progress_every_;
};

}  // namespace clef::cache
