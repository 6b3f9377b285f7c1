#pragma once
// The prefill layout of a record: its M-RoPE positions, the embedding runs of its images, its
// llama_decode batches and their chunk lengths, and the piece sizes a scheduler steps it in. Pure
// functions of the record's size, image spans and cuts (prefill_layout.cpp); no libllama.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace clef::backbone {

/// One token's M-RoPE position on libllama's four sections (t, h, w, z). A text token has the
/// same value on all four (libllama broadcasts a token batch's one position); an image token
/// has (q, q + row, q + column, 0) (contract section 4, backbone/mrope.hpp).
struct RopePosition {
  std::int32_t t = 0;
  std::int32_t h = 0;
  std::int32_t w = 0;
  std::int32_t z = 0;
  bool operator==(const RopePosition&) const = default;
};

/// A run of record tokens whose inputs are embedding rows (the vision tower's output) instead of
/// the token ids' embeddings: tokens [first, first + n_tokens), rows n_tokens x n_embd, row-major.
struct EmbeddingSpan {
  int first = 0;
  int n_tokens = 0;
  std::span<const float> rows;
};

/// One llama_decode call of a prefill: tokens [start, start + n_tokens), either all token ids or
/// all embedding rows (a llama_batch is one or the other).
struct PrefillBatch {
  int start = 0;
  int n_tokens = 0;
  bool embeddings = false;
  bool operator==(const PrefillBatch&) const = default;
};

/// The llama_decode calls of a prefill of `total` tokens with the embedding runs `spans` (sorted,
/// not overlapping, inside [0, total)): the record is split into segments at every span boundary
/// and at every `cuts` position (sorted; 0, `total` and span boundaries among them change
/// nothing), and each segment into chunks with chunk_length(segment length, offset in segment,
/// chunk). The layout depends only on the record (total, spans, cuts) and the chunk size; no chunk
/// is a 1-token tail of a longer segment. Without spans and cuts this is the text-only layout.
/// Throws clef::Error (internal) for spans out of order, overlapping or out of range, and cuts out
/// of order or range.
std::vector<PrefillBatch> prefill_batches(int total, std::span<const EmbeddingSpan> spans,
                                          int chunk, std::span<const int> cuts = {});

/// llama_batch.pos for `batch` given every token's position: for a token batch one value per token
/// (its t; libllama broadcasts it to the four sections, so a text token must have t == h == w ==
/// z), for an embedding batch 4 * n_tokens values section-major, [t...][h...][w...][z...]
/// (mtmd-helper-common.h set_position_mrope_2d). `positions` empty means plain positions
/// 0..total-1. Throws clef::Error (internal) for a text token whose sections differ.
std::vector<std::int32_t> batch_positions(const PrefillBatch& batch,
                                          std::span<const RopePosition> positions);

/// Rows a batch boundary is aligned to, so that repacked weights compute every row alike however
/// a record is chunked. ggml's repacked GEMM (ggml-cpu/repack.cpp forward_mul_mat_one_chunk; the
/// x86 kernels in arch/x86/repack.cpp take blocks of 16 rows, then of 4) sent a batch's last
/// nr % 4 rows through GEMV, which rounds differently, so a row's result depended on its place in
/// its batch (measured on the small Q4_K_M model: a cut at token 34 moved the rows, one at 36 did
/// not). Since cmake/patches/ggml-cpu-repacked-gemm-last-rows.diff only batches of 1 to 3 rows take
/// the GEMV; the alignment stays: with every batch but a record's last starting and ending at
/// multiples of 16 (both block sizes), each row takes the path it takes in one pass.
inline constexpr int kBatchRowAlignment = 16;

/// Length of the prefill chunk that starts at token `start` of a `total`-token segment: `chunk`,
/// except that the last two chunks become (chunk - 16, 17) instead of (chunk, 1) (a 1-token
/// decode takes llama.cpp's single-token kernels; 16: kBatchRowAlignment, so a chunk size that is
/// a multiple of 16 keeps every boundary on a multiple of 16), or (chunk - 1, 2) for chunks of 16
/// or fewer. The layout depends only on (total, chunk), so a record always gives bit-identical
/// hidden states.
int chunk_length(int total, int start, int chunk);

/// The longest piece of a prefill a scheduler steps while others may wait (runtime::plan_step),
/// with flash attention off: a waiting request waits for at most one piece.
/// A multiple of kBatchRowAlignment, so the rows are those of the record's own layout (measured:
/// 256-token pieces cost ~4% of a 1,934-token prefill against 512, 128-token ones ~10%; shape-0.8b,
/// docs/performance.md).
inline constexpr int kPausablePiece = 256;

/// Backbone::step's `piece_tokens` for a prefill that runs alone and nothing waits for, or with
/// flash attention: each piece is a whole batch of the record's layout (the fewest llama_decode
/// calls).
inline constexpr int kWholeBatches = std::numeric_limits<int>::max();

/// The most tokens of each piece when `n` prefills (n >= 1) share one step of at most
/// `most_tokens` each on a backbone that decodes at most `chunk_tokens` at once:
/// max(16, min(most_tokens, chunk_tokens / n)) rounded down to kBatchRowAlignment, so every
/// boundary stays where the record alone may have one and the step's pieces fill about one
/// chunk; kWholeBatches stays kWholeBatches. The rule runtime::plan_step sets a step's budget
/// with (the one place that does); Backbone::step takes what it gives.
constexpr int shared_piece(int most_tokens, int chunk_tokens, int n) {
  if (most_tokens == kWholeBatches) return kWholeBatches;
  const int share = chunk_tokens / (n < 1 ? 1 : n);
  const int most = most_tokens < share ? most_tokens : share;
  const int aligned = most / kBatchRowAlignment * kBatchRowAlignment;
  return aligned < kBatchRowAlignment ? kBatchRowAlignment : aligned;
}

}  // namespace clef::backbone
