#include "cache/state_cache.hpp"

#include <algorithm>
#include <cstring>

#include "util/digest.hpp"

namespace clef::cache {

std::size_t CachedPrefix::bytes() const noexcept {
  std::size_t n = sizeof(CachedPrefix) + ids.size() * sizeof(std::int32_t) + memory.data.size() +
                  rows.size() * sizeof(float);
  for (const std::string& d : image_digests) n += d.size();
  return n;
}

StateCache::StateCache(std::size_t budget_bytes) : budget_(budget_bytes) {
  stats_.budget = budget_bytes;
}

std::shared_ptr<const CachedPrefix> StateCache::find(std::span<const std::int32_t> ids,
                                                     std::span<const int> points,
                                                     std::span<const std::size_t> image_starts,
                                                     std::span<const std::string> image_digests) {
  if (!enabled()) return nullptr;
  const std::lock_guard lock(mutex_);
  auto best = lru_.end();
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const CachedPrefix& e = **it;
    const std::size_t n = e.ids.size();
    if (n > ids.size() || (best != lru_.end() && n <= (*best)->ids.size())) continue;
    if (std::find(points.begin(), points.end(), static_cast<int>(n)) == points.end()) continue;
    const auto inside = static_cast<std::size_t>(
        std::lower_bound(image_starts.begin(), image_starts.end(), n) - image_starts.begin());
    if (inside != e.image_digests.size() || inside > image_digests.size() ||
        !std::equal(e.image_digests.begin(), e.image_digests.end(), image_digests.begin())) {
      continue;
    }
    if (std::memcmp(e.ids.data(), ids.data(), n * sizeof(std::int32_t)) != 0) continue;
    best = it;
  }
  if (best == lru_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, best);
  ++stats_.hits;
  stats_.reused_tokens += lru_.front()->ids.size();
  return lru_.front();
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
