#include "cache/state_cache_manager.hpp"

#include <algorithm>
#include <memory>

#include "backbone/prefill_layout.hpp"
#include "cache/prefix_points.hpp"

namespace clef::cache {

std::size_t RecordCachePlan::first_image_to_encode() const {
  return static_cast<std::size_t>(std::lower_bound(image_starts.begin(), image_starts.end(),
                                                   static_cast<std::size_t>(resumed())) -
                                  image_starts.begin());
}

std::span<const std::string> RecordCachePlan::digests_before(std::size_t n) const {
  const auto inside =
      std::lower_bound(image_starts.begin(), image_starts.end(), n) - image_starts.begin();
  return std::span<const std::string>(digests).first(static_cast<std::size_t>(inside));
}

StateCacheManager::StateCacheManager(std::size_t budget_bytes,
                                     const backbone::BackboneParams& params, int n_embd,
                                     std::chrono::milliseconds progress_every)
    : cache_(budget_bytes), params_(params), n_embd_(n_embd), progress_every_(progress_every) {}

void StateCacheManager::plan(const record::Record& rec,
                             std::span<const backbone::EmbeddingSpan> image_blocks,
                             std::span<const std::string> digests, RecordCachePlan& plan) {
  const bool cache = cache_.enabled();
  plan.points = cache || params_.flash_attention ? snapshot_points(rec) : std::vector<int>{};
  plan.state_end = cache ? state_end_point(rec) : 0;
  plan.image_starts.clear();
  for (const backbone::EmbeddingSpan& block : image_blocks) {
    plan.image_starts.push_back(static_cast<std::size_t>(block.first));
  }
  plan.digests.assign(digests.begin(), digests.end());
  std::vector<int> boundaries;
  for (const backbone::PrefillBatch& b : backbone::prefill_batches(
           static_cast<int>(rec.ids.size()), image_blocks, params_.chunk_tokens, plan.points)) {
    boundaries.push_back(b.start);
  }
  plan.hit =
      cache_.find(rec.ids, boundaries, plan.image_starts, plan.digests, fixed_prefix_tokens(rec));
  const int resumed = plan.hit.tokens;

  // Snapshots at the points after the resumed part that are worth keeping and not kept yet; with
  // the state's end, recurrent-only checkpoints inside the state.
  if (cache) {
    SnapshotPlan snapshots = plan_snapshots(
        plan.points,
        [&](int point) {
          const auto ids =
              std::span<const std::int32_t>(rec.ids).first(static_cast<std::size_t>(point));
          return cache_.contains(ids, plan.digests_before(static_cast<std::size_t>(point)));
        },
        boundaries, resumed, static_cast<int>(rec.state_span.begin), plan.state_end);
    plan.snapshot_at = std::move(snapshots.snapshot_at);
    plan.checkpoint_at = std::move(snapshots.checkpoint_at);
  }
  backbone::PrefillOptions& options = plan.options;
  options = {};
  options.cuts = plan.points;
  options.snapshot_at = plan.snapshot_at;
  options.checkpoint_at = plan.checkpoint_at;
  if (cache) {
    // Each decision in progress may hold one progress snapshot: together within the cache's
    // budget (a long record on a small cache, or many at once, take none).
    options.progress_every = progress_every_;
    options.progress_max_bytes =
        cache_.budget() / static_cast<std::size_t>(std::max(1, params_.parallel));
  }
  if (plan.hit) {
    options.resume = &plan.hit.entry->memory;
    options.resume_checkpoint = plan.hit.checkpoint;
    options.resume_rows =
        std::span<const float>(plan.hit.entry->rows)
            .first(static_cast<std::size_t>(resumed) * static_cast<std::size_t>(n_embd_));
  }
}

CachedPrefix StateCacheManager::prefix_entry(const record::Record& rec, const RecordCachePlan& plan,
                                             const backbone::HiddenStates& hidden,
                                             backbone::MemorySnapshot memory) const {
  const auto n = static_cast<std::size_t>(memory.tokens);
  CachedPrefix entry;
  entry.ids.assign(rec.ids.begin(), rec.ids.begin() + static_cast<std::ptrdiff_t>(n));
  const auto before = plan.digests_before(n);
  entry.image_digests.assign(before.begin(), before.end());
  entry.rows.assign(hidden.data.begin(),
                    hidden.data.begin() + static_cast<std::ptrdiff_t>(n * hidden.n_embd));
  entry.memory = std::move(memory);
  return entry;
}

void StateCacheManager::keep_decided(const record::Record& rec, const RecordCachePlan& plan,
                                     backbone::HiddenStates& hidden) {
  const int resumed = plan.resumed();
  for (backbone::MemorySnapshot& m : hidden.snapshots) {
    const bool state_end = m.tokens == plan.state_end;
    CachedPrefix entry = prefix_entry(rec, plan, hidden, std::move(m));
    if (state_end) {
      // The resumed entry's checkpoints up to the resume point hold for this record too.
      if (plan.hit) {
        for (const auto& c : plan.hit.entry->checkpoints) {
          if (c->tokens <= resumed && c->tokens > static_cast<int>(rec.state_span.begin)) {
            entry.checkpoints.push_back(c);
          }
        }
      }
      for (backbone::MemorySnapshot& c : hidden.checkpoints) {
        entry.checkpoints.push_back(std::make_shared<const backbone::MemorySnapshot>(std::move(c)));
      }
    }
    cache_.insert(std::move(entry));
  }
}

void StateCacheManager::keep_abandoned(const record::Record& rec, const RecordCachePlan& plan,
                                       backbone::HiddenStates partial, int prefilled) {
  if (!cache_.enabled()) return;
  auto keep = [&](backbone::MemorySnapshot& m) {
    if (m.tokens <= plan.resumed() || m.tokens < kMinCachedTokens || m.tokens > prefilled) return;
    cache_.insert(prefix_entry(rec, plan, partial, std::move(m)));
  };
  for (backbone::MemorySnapshot& m : partial.snapshots) keep(m);
  if (partial.progress.tokens > 0) keep(partial.progress);
}

}  // namespace clef::cache
