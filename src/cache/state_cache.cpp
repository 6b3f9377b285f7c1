#include "cache/state_cache.hpp"

#include <algorithm>
#include <cstring>

#include "util/digest.hpp"

namespace clef::cache {

std::size_t CachedPrefix::bytes() const noexcept {
  std::size_t n = sizeof(CachedPrefix) + ids.size() * sizeof(std::int32_t) + memory.data.size() +
                  rows.size() * sizeof(float);
  for (const std::string& d : image_digests) n += d.size();
  for (const auto& c : checkpoints) n += sizeof(*c) + c->data.size();
  return n;
}

StateCache::StateCache(std::size_t budget_bytes) : budget_(budget_bytes) {
  stats_.budget = budget_bytes;
}

CacheHit StateCache::find(std::span<const std::int32_t> ids, std::span<const int> boundaries,
                          std::span<const std::size_t> image_starts,
                          std::span<const std::string> image_digests, int fixed_prefix) {
  if (!enabled()) return {};
  auto is_boundary = [&](std::size_t at) {
    return std::binary_search(boundaries.begin(), boundaries.end(), static_cast<int>(at));
  };
  // The record's images that start before `at` have the entry's digests; at the entry's end
  // they are all of the entry's images (before a checkpoint, equal ids mean equal image blocks).
  auto same_images = [&](const CachedPrefix& e, std::size_t at) {
    const auto inside = static_cast<std::size_t>(
        std::lower_bound(image_starts.begin(), image_starts.end(), at) - image_starts.begin());
    if (at == e.ids.size() ? inside != e.image_digests.size() : inside > e.image_digests.size()) {
      return false;
    }
    return inside <= image_digests.size() &&
           std::equal(image_digests.begin(),
                      image_digests.begin() + static_cast<std::ptrdiff_t>(inside),
                      e.image_digests.begin());
  };
  const std::lock_guard lock(mutex_);
  CacheHit best;
  auto best_it = lru_.end();
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const CachedPrefix& e = **it;
    const std::size_t n = std::min(e.ids.size(), ids.size());
    const auto common = static_cast<std::size_t>(
        std::mismatch(e.ids.begin(), e.ids.begin() + static_cast<std::ptrdiff_t>(n), ids.begin())
            .first -
        e.ids.begin());
    CacheHit candidate;
    if (common == e.ids.size() && common < ids.size() && is_boundary(common) &&
        same_images(e, common)) {
      candidate = {*it, static_cast<int>(common), nullptr};
    } else {
      for (auto c = e.checkpoints.rbegin(); c != e.checkpoints.rend(); ++c) {
        const auto at = static_cast<std::size_t>((*c)->tokens);
        if (at <= common && is_boundary(at) && same_images(e, at)) {
          candidate = {*it, (*c)->tokens, c->get()};
          break;
        }
      }
    }
    if (candidate && candidate.tokens > best.tokens) {
      best = candidate;
      best_it = it;
    }
  }
  if (!best) {
    ++stats_.misses;
    return {};
  }
  lru_.splice(lru_.begin(), lru_, best_it);
  ++stats_.hits;
  if (best.tokens <= fixed_prefix) ++stats_.prefix_hits;
  stats_.reused_tokens += static_cast<std::uint64_t>(best.tokens);
  return best;
}

bool StateCache::holds(std::span<const std::int32_t> ids,
                       std::span<const std::string> digests) const {
  return std::any_of(lru_.begin(), lru_.end(), [&](const Entry& e) {
    return std::equal(e->ids.begin(), e->ids.end(), ids.begin(), ids.end()) &&
           std::equal(e->image_digests.begin(), e->image_digests.end(), digests.begin(),
                      digests.end());
  });
}

bool StateCache::contains(std::span<const std::int32_t> ids,
                          std::span<const std::string> image_digests) const {
  const std::lock_guard lock(mutex_);
  return holds(ids, image_digests);
}

void StateCache::insert(CachedPrefix entry) {
  const std::size_t size = entry.bytes();
  if (!enabled() || size > budget_) return;
  const std::lock_guard lock(mutex_);
  if (holds(entry.ids, entry.image_digests)) return;
  while (!lru_.empty() && stats_.bytes + size > budget_) {
    stats_.bytes -= lru_.back()->bytes();
    lru_.pop_back();
    ++stats_.evictions;
  }
  lru_.push_front(std::make_shared<const CachedPrefix>(std::move(entry)));
  stats_.bytes += size;
  ++stats_.insertions;
  stats_.entries = lru_.size();
}

StateCacheStats StateCache::stats() const {
  const std::lock_guard lock(mutex_);
  StateCacheStats s = stats_;
  s.entries = lru_.size();
  return s;
}

std::string image_digest(int width, int height, std::span<const std::uint8_t> rgb) {
  util::Digest d(util::Digest::Kind::sha256);
  const std::string size = std::to_string(width) + "x" + std::to_string(height) + ":";
  d.update(size);
  d.update({reinterpret_cast<const char*>(rgb.data()), rgb.size()});
  return d.hex();
}

}  // namespace clef::cache
