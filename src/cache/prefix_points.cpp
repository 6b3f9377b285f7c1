#include "cache/prefix_points.hpp"

#include <algorithm>

namespace clef::cache {

int fixed_prefix_tokens(const record::Record& rec) {
  return rec.images.empty() ? static_cast<int>(rec.prefix_tokens)
                            : static_cast<int>(rec.images.front().first_token);
}

std::vector<int> snapshot_points(const record::Record& rec) {
  const int total = static_cast<int>(rec.ids.size());
  // Boundaries the layout has anyway: the record's ends and every image span's ends.
  std::vector<int> fixed = {0, total};
  for (const record::ImageBlock& b : rec.images) {
    fixed.push_back(static_cast<int>(b.first_token));
    fixed.push_back(static_cast<int>(b.first_token + b.n_tokens));
  }
  const int first_text_end = fixed_prefix_tokens(rec);
  std::vector<int> out;
  for (int p : {first_text_end, static_cast<int>(rec.state_span.end)}) {
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

}  // namespace clef::cache
