#include "cache/prefix_points.hpp"

#include <algorithm>
#include <span>

#include "backbone/prefill_layout.hpp"

namespace clef::cache {

int fixed_prefix_tokens(const record::Record& rec) {
  return rec.images.empty() ? static_cast<int>(rec.prefix_tokens)
                            : static_cast<int>(rec.images.front().first_token);
}

namespace {

/// Boundaries the layout has anyway: the record's ends and every image span's ends.
std::vector<int> layout_boundaries(const record::Record& rec) {
  std::vector<int> fixed = {0, static_cast<int>(rec.ids.size())};
  for (const record::ImageBlock& b : rec.images) {
    fixed.push_back(static_cast<int>(b.first_token));
    fixed.push_back(static_cast<int>(b.first_token + b.n_tokens));
  }
  return fixed;
}

/// Where a cut at token `p` goes: down to a multiple of the row alignment from the start of its
/// text segment (the record's start, or the end of the image block before it), so that every
/// batch of the segment starts where it would without the cut (a boundary stays where it is).
int aligned_cut(std::span<const int> fixed, int p) {
  int segment_start = 0;
  for (int b : fixed) {
    if (b <= p) segment_start = std::max(segment_start, b);
  }
  return p - (p - segment_start) % backbone::kBatchRowAlignment;
}

}  // namespace

int state_end_point(const record::Record& rec) {
  const int p = aligned_cut(layout_boundaries(rec), static_cast<int>(rec.state_span.end));
  const std::vector<int> points = snapshot_points(rec);
  return std::find(points.begin(), points.end(), p) != points.end() ? p : 0;
}

std::vector<int> snapshot_points(const record::Record& rec) {
  const int total = static_cast<int>(rec.ids.size());
  const std::vector<int> fixed = layout_boundaries(rec);
  const int first_text_end = fixed_prefix_tokens(rec);
  std::vector<int> out;
  for (int p : {first_text_end, static_cast<int>(rec.state_span.end)}) {
    p = aligned_cut(fixed, p);
    if (p <= 0 || p >= total || std::find(out.begin(), out.end(), p) != out.end()) continue;
    std::vector<int> around = fixed;
    around.insert(around.end(), out.begin(), out.end());
    const bool one_token_segment = std::any_of(
        around.begin(), around.end(), [p](int b) { return b != p && (b == p - 1 || b == p + 1); });
    if (!one_token_segment) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

SnapshotPlan plan_snapshots(std::span<const int> points, const std::function<bool(int)>& cached,
                            std::span<const int> boundaries, int resumed, int state_begin,
                            int state_end) {
  SnapshotPlan plan;
  for (int point : points) {
    if (point > resumed && point >= kMinCachedTokens && !cached(point)) {
      plan.snapshot_at.push_back(point);
    }
  }
  if (state_end <= 0 || plan.snapshot_at.empty() || plan.snapshot_at.back() != state_end) {
    return plan;
  }
  std::vector<int> candidates;
  for (int b : boundaries) {
    if (b > resumed && b > state_begin && b < state_end && b >= kMinCachedTokens) {
      candidates.push_back(b);
    }
  }
  const std::size_t stride = (candidates.size() + kMaxCheckpoints - 1) / kMaxCheckpoints;
  for (std::size_t i = candidates.size(); i > 0 && stride > 0; i -= std::min(i, stride)) {
    plan.checkpoint_at.insert(plan.checkpoint_at.begin(), candidates[i - 1]);
  }
  return plan;
}

}  // namespace clef::cache
