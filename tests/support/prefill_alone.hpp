#pragma once
// One record's prefill alone on sequence 0 of a backbone, in whole layout batches
// (Backbone::start, then Backbone::step until done): what the backbone's tests and the benchmarks
// measure; the engine steps its prefills through the runner instead.

#include <span>

#include "backbone/backbone.hpp"

namespace clef::test {

/// Backbone::step of `prefills` as a scheduler of a server's loop plans it when every one of them
/// advances: a piece of kPausablePiece shared within one chunk among those not done
/// (backbone::shared_piece), whole layout batches with flash attention.
inline void step_shared(backbone::Backbone& backbone,
                        std::span<backbone::Prefill* const> prefills) {
  int live = 0;
  for (const backbone::Prefill* p : prefills) live += p->done() ? 0 : 1;
  const backbone::BackboneParams& params = backbone.params();
  backbone.step(prefills,
                params.flash_attention
                    ? backbone::kWholeBatches
                    : backbone::shared_piece(backbone::kPausablePiece, params.chunk_tokens, live));
}

/// The final-norm hidden states [T, n_embd] of `ids` from a fresh sequence 0, sharing work
/// through `reuse` (Backbone::start's inputs). Throws what Backbone::start and step throw, and
/// clef::DecisionCancelled once `cancelled` says so.
inline backbone::HiddenStates hidden_states(backbone::Backbone& backbone,
                                            std::span<const std::int32_t> ids,
                                            std::span<const backbone::RopePosition> positions,
                                            std::span<const backbone::EmbeddingSpan> embeddings,
                                            const backbone::PrefillOptions& reuse,
                                            const backbone::Cancelled& cancelled = {}) {
  backbone::Prefill prefill = backbone.start(ids, positions, embeddings, reuse, cancelled, 0);
  backbone::Prefill* const self = &prefill;
  while (!prefill.done()) {
    backbone.step(std::span<backbone::Prefill* const>(&self, 1), backbone::kWholeBatches);
  }
  if (prefill.cancelled()) backbone::throw_cancelled(prefill.cancelled_at());
  return prefill.take();
}

/// The same with images (`embeddings`, M-RoPE `positions`; empty: plain 0..T-1), nothing shared.
inline backbone::HiddenStates hidden_states(backbone::Backbone& backbone,
                                            std::span<const std::int32_t> ids,
                                            std::span<const backbone::RopePosition> positions,
                                            std::span<const backbone::EmbeddingSpan> embeddings,
                                            const backbone::Cancelled& cancelled = {}) {
  return hidden_states(backbone, ids, positions, embeddings, backbone::PrefillOptions{}, cancelled);
}

/// The same for text: plain positions, no embedding rows.
inline backbone::HiddenStates hidden_states(backbone::Backbone& backbone,
                                            std::span<const std::int32_t> ids,
                                            const backbone::Cancelled& cancelled = {}) {
  return hidden_states(backbone, ids, {}, {}, cancelled);
}

}  // namespace clef::test
