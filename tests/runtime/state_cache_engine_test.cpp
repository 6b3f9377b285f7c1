// The state cache end to end on the tiny test model: a request that shares its state (and
// images) with an earlier one resumes from the cached prefix and answers with exactly the bytes
// of an engine without a cache, wherever the state ends relative to the prefill chunks, with a
// truncated state, with images, and when only the system prefix is shared.
#include <gtest/gtest.h>

#include <atomic>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "cache/prefix_points.hpp"
#include "json/parse.hpp"
#include "media/base64.hpp"
#include "media/decode.hpp"
#include "media/image_source.hpp"
#include "runtime/loop/cancellation.hpp"
#include "runtime/make_engine.hpp"
#include "support/grey_png.hpp"
#include "support/ticket_requests.hpp"
#include "support/ticket_text.hpp"
#include "support/tiny_engine_config.hpp"

namespace {

using clef::json::Value;
namespace rt = clef::runtime;

constexpr int kChunk = 64;

rt::EngineConfig config(std::int64_t cache_mb, int context = 4096,
                        const std::string& preset = "tiny") {
  rt::EngineConfig c = clef::test::preset_engine_config(preset);
  c.backbone.context_size = context;
  c.backbone.chunk_tokens = kChunk;
  c.state_cache_mb = cache_mb;
  return c;
}

const char* const kQuestionsA = clef::test::kTicketQuestionsA;
const char* const kQuestionsB = clef::test::kTicketQuestionsB;
using clef::test::ticket_request;

Value request(const std::string& state, const char* questions,
              const std::vector<std::string>& images = {}) {
  return ticket_request(state, questions, images);
}

/// The first token of every batch of `rec`'s prefill layout (text-only: cut at its snapshot
/// points), as the engine lays it out.
std::vector<int> layout_starts(const clef::record::Record& rec) {
  std::vector<int> out;
  const std::vector<int> cuts = clef::cache::snapshot_points(rec);
  for (const auto& b :
       clef::backbone::prefill_batches(static_cast<int>(rec.ids.size()), {}, kChunk, cuts)) {
    out.push_back(b.start);
  }
  return out;
}

/// Where `next` resumes from what `first` left in the cache (a snapshot at its state-end point and
/// checkpoints at its layout boundaries inside the state, all kept when there are at most 8): the
/// last of those that is also a batch start of `next` and where the two records' ids still agree.
int resume_point(const clef::record::Record& first, const clef::record::Record& next) {
  std::size_t agree = 0;
  while (agree < first.ids.size() && agree < next.ids.size() &&
         first.ids[agree] == next.ids[agree]) {
    ++agree;
  }
  const int end = clef::cache::state_end_point(first);
  std::vector<int> kept;
  for (int b : layout_starts(first)) {
    if (b > static_cast<int>(first.state_span.begin) && b < end) kept.push_back(b);
  }
  kept.push_back(end);
  const std::vector<int> starts = layout_starts(next);
  int best = 0;
  for (int c : kept) {
    if (static_cast<std::size_t>(c) <= agree &&
        std::find(starts.begin(), starts.end(), c) != starts.end()) {
      best = std::max(best, c);
    }
  }
  return best;
}

/// On the tiny model and on Clef 27B's ratios (small-27b: other recurrent-state and KV sizes,
/// so other snapshots and checkpoints; its 320-wide projector for the image test).
class StateCacheEngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  struct Engines {
    std::optional<rt::Engine> cached;  ///< a 64 MiB state cache
    std::optional<rt::Engine> cold;    ///< none
  };
  static void TearDownTestSuite() { engines().clear(); }
  static std::map<std::string, Engines>& engines() {
    static std::map<std::string, Engines> by_preset;
    return by_preset;
  }
  Engines& model_engines() const {
    Engines& e = engines()[GetParam()];
    if (!e.cached) {
      e.cached = rt::make_engine(config(64, 4096, GetParam()));
      e.cold = rt::make_engine(config(0, 4096, GetParam()));
    }
    return e;
  }
  rt::Engine& cached() const { return *model_engines().cached; }
  rt::Engine& cold() const { return *model_engines().cold; }
  /// Decides `body` on the cached engine and checks its bytes against the cold engine's.
  rt::Decision expect_cold_bytes(const Value& body) const {
    rt::Decision d = cached().decide(body);
    EXPECT_EQ(d.body, cold().decide(body).body) << "cached tokens " << d.cached_tokens;
    return d;
  }
};

TEST_P(StateCacheEngineTest, SameStateNewQuestionsResumesAtTheStateEndWithColdBytes) {
  // State ends one token before, at, and one token after a chunk boundary (and elsewhere).
  std::set<int> offsets_seen;
  for (int words = 20; words < 200 && offsets_seen.size() < 5; ++words) {
    const Value a = request(clef::test::ticket_words(words), kQuestionsA);
    const clef::record::Record rec = cached().prepare(a).record;
    const int state_end = static_cast<int>(rec.state_span.end);
    const int offset = state_end % kChunk;
    if (offset != kChunk - 1 && offset != 0 && offset != 1 && offset != 10 && offset != 40)
      continue;
    if (!offsets_seen.insert(offset).second) continue;
    SCOPED_TRACE("state end " + std::to_string(state_end));
    expect_cold_bytes(a);  // caches the state
    const rt::Decision b = expect_cold_bytes(request(clef::test::ticket_words(words), kQuestionsB));
    // The state end moved down to a multiple of 16 (cache::snapshot_points).
    const int point = state_end - state_end % 16;
    EXPECT_EQ(clef::cache::state_end_point(rec), point);
    EXPECT_EQ(b.cached_tokens, point);
    const rt::Decision again = expect_cold_bytes(a);
    EXPECT_EQ(again.cached_tokens, point);
  }
  EXPECT_EQ(offsets_seen, (std::set<int>{0, 1, 10, 40, kChunk - 1}));
  const clef::cache::StateCacheStats s = cached().runner->state_cache_stats();
  EXPECT_GE(s.hits, 10u);
  EXPECT_GT(s.bytes, 0u);
  EXPECT_EQ(cold().runner->state_cache_stats().hits, 0u);
  EXPECT_EQ(cold().runner->state_cache_stats().entries, 0u);
}

TEST_P(StateCacheEngineTest, ANewStateResumesFromTheSystemPrefix) {
  cached().decide(request("warm the prefix", kQuestionsA));
  const Value body = request("a different ticket about payments", kQuestionsB);
  const rt::Decision d = expect_cold_bytes(body);
  const clef::record::Record rec = cached().prepare(body).record;
  EXPECT_EQ(d.cached_tokens, clef::cache::snapshot_points(rec).front());
  EXPECT_EQ(d.cached_tokens, static_cast<int>(rec.prefix_tokens) / 16 * 16);
  EXPECT_GT(d.cached_tokens, 30);
}

TEST_P(StateCacheEngineTest, AnExtendedOrEditedStateResumesFromTheLastCommonCheckpoint) {
  // An agent re-asks as the ticket grows: the state gets more words at its end, or one word in
  // the middle changes. The earlier record's checkpoints at the state's chunk boundaries give
  // the new one everything before the change, and the answers stay the cold bytes.
  const std::string base = clef::test::ticket_words(240);
  const Value first = request(base, kQuestionsA);
  const clef::record::Record first_rec = cached().prepare(first).record;
  ASSERT_GT(first_rec.state_span.size(), 3u * kChunk);
  expect_cold_bytes(first);

  const Value extended = request(base + " the customer wrote again an hour later", kQuestionsA);
  const rt::Decision grown = expect_cold_bytes(extended);
  const auto prefix = static_cast<int>(first_rec.prefix_tokens);
  EXPECT_EQ(grown.cached_tokens, resume_point(first_rec, cached().prepare(extended).record));
  EXPECT_GT(grown.cached_tokens, prefix + kChunk);
  // Grown by more than a row block, the state resumes from the last checkpoint inside the old one.
  const Value longer = request(base + " " + clef::test::ticket_words(30), kQuestionsA);
  const clef::record::Record longer_rec = cached().prepare(longer).record;
  const rt::Decision grown_more = expect_cold_bytes(longer);
  EXPECT_EQ(grown_more.cached_tokens, resume_point(first_rec, longer_rec));
  EXPECT_LT(grown_more.cached_tokens, clef::cache::state_end_point(first_rec));
  EXPECT_GT(grown_more.cached_tokens, prefix + kChunk);

  std::string edited = base;
  const std::size_t middle = edited.size() / 2;
  edited.replace(edited.find(' ', middle), 1, " urgent ");
  const rt::Decision changed = expect_cold_bytes(request(edited, kQuestionsB));
  EXPECT_GT(changed.cached_tokens, prefix);
  EXPECT_LT(changed.cached_tokens, static_cast<int>(first_rec.state_span.end));
  // The extended record's own entry resumes the extended state again at its end.
  const rt::Decision again =
      expect_cold_bytes(request(base + " the customer wrote again an hour later", kQuestionsB));
  EXPECT_EQ(again.cached_tokens, clef::cache::state_end_point(cached().prepare(extended).record));
}

TEST_P(StateCacheEngineTest, ALongStateKeepsAtMostEightCheckpointsAndAlwaysTheLast) {
  // About 15 chunk boundaries inside the state: 8 are kept, evenly spaced, the last among them.
  const std::string base = clef::test::ticket_words(1000);
  const Value first = request(base, kQuestionsA);
  const clef::record::Record rec = cached().prepare(first).record;
  const auto prefix = static_cast<int>(rec.prefix_tokens);
  ASSERT_GT(static_cast<int>(rec.state_span.size()), 12 * kChunk);
  const auto before = cached().runner->state_cache_stats().bytes;
  expect_cold_bytes(first);
  const auto grown_by = cached().runner->state_cache_stats().bytes - before;
  const Value longer = request(base + " " + clef::test::ticket_words(30), kQuestionsB);
  const rt::Decision extended = expect_cold_bytes(longer);
  // The last boundary inside the state is always among the 8 kept.
  EXPECT_EQ(extended.cached_tokens, resume_point(rec, cached().prepare(longer).record));
  EXPECT_LT(extended.cached_tokens, clef::cache::state_end_point(rec));
  // An edit near the start resumes from an earlier kept checkpoint, not from every boundary.
  std::string edited = base;
  edited.replace(edited.find(' ', edited.size() / 3), 1, " urgent ");
  const rt::Decision changed = expect_cold_bytes(request(edited, kQuestionsB));
  EXPECT_GT(changed.cached_tokens, prefix);
  EXPECT_GT(grown_by, 0u);
}

TEST_P(StateCacheEngineTest, ATruncatedStateIsCachedAtItsCutEnd) {
  auto small_cached = rt::make_engine(config(64, 512));
  auto small_cold = rt::make_engine(config(0, 512));
  const std::string state = clef::test::ticket_words(900);
  const Value a = request(state, kQuestionsA);
  const Value b = request(state, kQuestionsB);
  const clef::record::Record rec = small_cached.prepare(b).record;
  ASSERT_TRUE(rec.state_truncated);
  EXPECT_EQ(small_cached.decide(a).body, small_cold.decide(a).body);
  const rt::Decision warm = small_cached.decide(b);
  // A shorter schema leaves more room for the state: b's state is cut elsewhere than a's, so
  // only the system prefix is shared; b itself is then cached at its own state end.
  EXPECT_EQ(warm.body, small_cold.decide(b).body);
  const rt::Decision warm_again = small_cached.decide(b);
  EXPECT_EQ(warm_again.cached_tokens, clef::cache::state_end_point(rec));
  EXPECT_EQ(warm_again.body, warm.body);
}

TEST_P(StateCacheEngineTest, ImagesAreKeyedByTheirPixels) {
  const std::string arrows = clef::media::image_file_data_uri(
      std::string(CLEF_TEST_DATA) + "/oracle/coreai/images/arrows_640x480.png",
      clef::media::DecodeLimits{}, "image");
  const std::string png = clef::test::grey_png(640, 480);
  const std::string grey =
      "data:image/png;base64," +
      clef::media::encode_base64({reinterpret_cast<const std::uint8_t*>(png.data()), png.size()});
  const std::string state = clef::test::ticket_words(40);
  const Value a = request(state, kQuestionsA, {arrows});
  const Value b = request(state, kQuestionsB, {arrows});
  const clef::record::Record rec = cached().prepare(b).record;
  expect_cold_bytes(a);
  const rt::Decision warm = expect_cold_bytes(b);
  EXPECT_EQ(warm.cached_tokens, clef::cache::state_end_point(rec));
  // Same size, same ids and positions, other pixels: only the prefix up to the image is shared.
  const rt::Decision other = expect_cold_bytes(request(state, kQuestionsB, {grey}));
  EXPECT_EQ(other.cached_tokens, static_cast<int>(rec.images.at(0).first_token));
}

/// A decision whose client went away mid-prefill (an SDK attempt that timed out) leaves its
/// latest progress snapshot in the cache: the retry of the same request resumes there, not at
/// token 0, and answers with the cold bytes.
INSTANTIATE_TEST_SUITE_P(Models, StateCacheEngineTest,
                         ::testing::ValuesIn(clef::test::model_presets()),
                         clef::test::preset_test_name);

TEST(StateCacheEngine, AnAbandonedPrefillLeavesItsProgressForTheRetry) {
  auto c = config(256);
  c.resume_snapshot_ms = 1;  // a progress snapshot at (nearly) every layout boundary
  auto cached = rt::make_engine(c);
  auto cold = rt::make_engine(config(0));
  const Value body = request(clef::test::ticket_words(1500), kQuestionsA);
  // How often a decision of `body` asks whether its client is still there (between graph nodes,
  // one thread): counted on a run never cancelled. The client below leaves after half of them,
  // about halfway through the prefill whatever else the machine is doing (it left after half the
  // cold run's wall time, which a busy machine could stretch past the whole prefill: a flake seen
  // under ctest -j2).
  std::atomic<long> checks{0};
  const rt::Decision reference = cold.decide(cold.prepare(body, rt::Cancellation::polling(
                                                                    [&] {
                                                                      ++checks;
                                                                      return false;
                                                                    },
                                                                    std::chrono::milliseconds(0))));
  const int total = reference.input_tokens;
  ASSERT_GT(checks.load(), 4);

  // Decides `body` on `engine` for a client that leaves about halfway through the prefill.
  auto abandon = [&](rt::Engine& engine) {
    auto seen = std::make_shared<std::atomic<long>>(0);
    const rt::Cancellation gone = rt::Cancellation::polling(
        [seen, half = checks.load() / 2] { return ++*seen > half; }, std::chrono::milliseconds(0));
    rt::PreparedRequest abandoned = engine.prepare(body, gone);
    EXPECT_THROW(engine.decide(abandoned), clef::DecisionCancelled);
  };
  abandon(cached);
  EXPECT_GT(cached.runner->state_cache_stats().entries, 0u);
  const rt::Decision retried = cached.decide(body);
  EXPECT_EQ(retried.body, reference.body);
  EXPECT_GT(retried.cached_tokens, clef::cache::fixed_prefix_tokens(cached.prepare(body).record))
      << "resumed only from the system prefix";
  EXPECT_LT(retried.cached_tokens, total);

  // Off: the retry starts again from the system prefix at most.
  auto off_config = config(256);
  off_config.resume_snapshot_ms = 0;
  auto off = rt::make_engine(off_config);
  abandon(off);
  const rt::Decision from_scratch = off.decide(body);
  EXPECT_EQ(from_scratch.body, reference.body);
  EXPECT_LE(from_scratch.cached_tokens, clef::cache::fixed_prefix_tokens(off.prepare(body).record));
}

TEST(StateCacheEngine, FlashAttentionAnswersDoNotDependOnTheCache) {
  // With flash attention the CPU kernels depend on the chunk layout; the layout is cut at the
  // snapshot points with or without a cache, so a hit still gives the cold bytes.
  auto cached_config = config(64);
  cached_config.backbone.flash_attention = true;
  auto cold_config = config(0);
  cold_config.backbone.flash_attention = true;
  auto cached = rt::make_engine(cached_config);
  auto cold = rt::make_engine(cold_config);
  for (int words : {30, 75, 130}) {
    const Value a = request(clef::test::ticket_words(words), kQuestionsA);
    const Value b = request(clef::test::ticket_words(words), kQuestionsB);
    EXPECT_EQ(cached.decide(a).body, cold.decide(a).body);
    const rt::Decision warm = cached.decide(b);
    EXPECT_GT(warm.cached_tokens, 0);
    EXPECT_EQ(warm.body, cold.decide(b).body) << words << " words";
    const Value extended =
        request(clef::test::ticket_words(words) + " and one more thing", kQuestionsB);
    EXPECT_EQ(cached.decide(extended).body, cold.decide(extended).body) << words << " words";
  }
}

}  // namespace
