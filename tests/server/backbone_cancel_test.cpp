// Backbone::hidden_states with a cancellation check over the tiny test model: a check that says
// "gone" stops the prefill between chunks and inside a chunk (llama.cpp's abort callback) with
// code client_closed_request, and the backbone decides the next record normally (its state is
// cleared per record). This is the path a long decision takes when its client leaves.
#include <gtest/gtest.h>

#include <atomic>

#include "backbone/backbone.hpp"
#include "support/prefill_alone.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/token_ids.hpp"
#include "util/error.hpp"

namespace {

using clef::backbone::Backbone;
using clef::backbone::BackboneParams;
using clef::testmodel::random_token_ids;

BackboneParams params(int chunk) {
  BackboneParams p;
  p.context_size = 2048;
  p.threads = 1;
  p.chunk_tokens = chunk;
  return p;
}

std::string code_of(Backbone& backbone, std::span<const std::int32_t> ids,
                    const clef::backbone::Cancelled& cancelled) {
  try {
    clef::test::hidden_states(backbone, ids, cancelled);
  } catch (const clef::Error& e) {
    return e.code();
  }
  return "";
}

TEST(BackboneCancel, StopsBetweenAndInsideChunksThenDecidesTheNextRecord) {
  clef::test::ensure_llama_backend();
  Backbone backbone(clef::test::tiny_model().backbone.string(), params(64));
  const auto ids = random_token_ids(300, backbone.n_vocab(), 7);
  const auto reference = clef::test::hidden_states(backbone, ids);

  // Between chunks: gone from the third check on (asked before each chunk and from compute).
  std::atomic<int> calls{0};
  EXPECT_EQ(code_of(backbone, ids, [&] { return ++calls > 2; }), "client_closed_request");
  EXPECT_GT(calls.load(), 2);

  // Inside the first chunk: false before it starts, true once the graph computes.
  Backbone one_chunk(clef::test::tiny_model().backbone.string(), params(512));
  calls = 0;
  EXPECT_EQ(code_of(one_chunk, ids, [&] { return ++calls > 1; }), "client_closed_request");

  // Never cancelled: the same rows as without a check; afterwards a plain record is unchanged.
  auto checked = clef::test::hidden_states(backbone, ids, [] { return false; });
  EXPECT_EQ(checked.data, reference.data);
  EXPECT_EQ(clef::test::hidden_states(backbone, ids).data, reference.data);
}

}  // namespace
