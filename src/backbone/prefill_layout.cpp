// The prefill layout of a record (backbone.hpp): its batches, their M-RoPE positions, and chunk
// lengths. Pure functions of the record's size, image spans and cuts.
#include <algorithm>
#include <string>

#include "backbone/prefill_layout.hpp"
#include "util/error.hpp"

namespace clef::backbone {

namespace {

[[noreturn]] void bad_layout(const std::string& what) {
  throw Error(ErrorKind::internal, "backbone_failed", "prefill: " + what);
}

}  // namespace

std::vector<PrefillBatch> prefill_batches(int total, std::span<const EmbeddingSpan> spans,
                                          int chunk, std::span<const int> cuts) {
  if (chunk < 1) bad_layout("chunk size " + std::to_string(chunk));
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    if (cuts[i] < 0 || cuts[i] > total || (i > 0 && cuts[i] < cuts[i - 1])) {
      bad_layout("layout cut " + std::to_string(cuts[i]) + " is out of order or outside a " +
                 std::to_string(total) + "-token record");
    }
  }
  std::vector<PrefillBatch> out;
  std::size_t next_cut = 0;
  auto add_chunks = [&](int begin, int end, bool embeddings) {
    for (int start = begin; start < end;) {
      const int n = chunk_length(end - begin, start - begin, chunk);
      out.push_back({start, n, embeddings});
      start += n;
    }
  };
  // A text segment is cut further at `cuts`; an embedding span is one segment.
  auto add_segment = [&](int begin, int end, bool embeddings) {
    if (embeddings) return add_chunks(begin, end, true);
    while (next_cut < cuts.size() && cuts[next_cut] <= begin) ++next_cut;
    for (; next_cut < cuts.size() && cuts[next_cut] < end; ++next_cut) {
      add_chunks(begin, cuts[next_cut], false);
      begin = cuts[next_cut];
    }
    add_chunks(begin, end, false);
  };
  int at = 0;
  for (const EmbeddingSpan& s : spans) {
    if (s.n_tokens <= 0 || s.first < at || s.first > total - s.n_tokens) {
      bad_layout("embedding span [" + std::to_string(s.first) + ", +" + std::to_string(s.n_tokens) +
                 ") does not fit a " + std::to_string(total) + "-token record in order");
    }
    add_segment(at, s.first, false);
    add_segment(s.first, s.first + s.n_tokens, true);
    at = s.first + s.n_tokens;
  }
  add_segment(at, total, false);
  return out;
}

std::vector<std::int32_t> batch_positions(const PrefillBatch& batch,
                                          std::span<const RopePosition> positions) {
  const auto n = static_cast<std::size_t>(batch.n_tokens);
  const auto at = static_cast<std::size_t>(batch.start);
  if (!positions.empty() && at + n > positions.size()) bad_layout("fewer positions than tokens");
  auto pos = [&](std::size_t i) {
    return positions.empty()
               ? RopePosition{static_cast<std::int32_t>(at + i), static_cast<std::int32_t>(at + i),
                              static_cast<std::int32_t>(at + i), static_cast<std::int32_t>(at + i)}
               : positions[at + i];
  };
  std::vector<std::int32_t> out;
  if (!batch.embeddings) {
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const RopePosition p = pos(i);
      if (p.h != p.t || p.w != p.t || p.z != p.t) {
        bad_layout("text token " + std::to_string(at + i) + " has different M-RoPE sections");
      }
      out[i] = p.t;
    }
    return out;
  }
  out.resize(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const RopePosition p = pos(i);
    out[i] = p.t;
    out[n + i] = p.h;
    out[2 * n + i] = p.w;
    out[3 * n + i] = p.z;
  }
  return out;
}

int chunk_length(int total, int start, int chunk) {
  const int left = total - start;
  if (left <= chunk) return left;
  // A one-token decode takes llama.cpp's single-token kernels (Gated DeltaNet's autoregressive
  // path, gemv), whose rounding differs from the batched ones: never leave a 1-token last chunk.
  // Moving a whole row block keeps the boundary aligned for repacked weights.
  if (left == chunk + 1) {
    if (chunk > kBatchRowAlignment) return chunk - kBatchRowAlignment;
    if (chunk > 1) return chunk - 1;
  }
  return chunk;
}

}  // namespace clef::backbone
