// JointSchemaHead beyond the oracle records: the scale clamps bind exactly at f32(ln 100),
// results do not depend on the thread count nor on whether outgrown compute buffers are kept, and
// inconsistent inputs are refused.

#include "head/joint_schema_head.hpp"

#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "head/head_weights.hpp"
#include "oracle_reader.hpp"
#include "random_record.hpp"
#include "raw_safetensors.hpp"
#include "util/error.hpp"

namespace clef::head {
namespace {

namespace fs = std::filesystem;
using testing::OracleRecord;

const fs::path kTiny = fs::path(CLEF_TEST_DATA) / "oracle" / "head" / "tiny";

struct TinyRecord {
  OracleRecord rec;
  std::vector<float> lexical;
};

TinyRecord tiny_record(const std::string& name) {
  TinyRecord t{testing::read_record(kTiny / name), {}};
  t.lexical = testing::lexical_vectors(t.rec, testing::read_lexical_table(kTiny), 64);
  return t;
}

/// The tiny F32 head with scalar `name` replaced by `value`.
HeadWeights tiny_with_scalar(const std::string& name, float value) {
  const auto dir = testing::scratch_dir("scalar");
  auto tensors = testing::read_all(kTiny / "joint_head_f32.safetensors");
  for (auto& t : tensors) {
    if (t.name == name) t.bytes = testing::f32_bytes({value});
  }
  testing::write_safetensors(dir / "w.safetensors", tensors);
  return HeadWeights::load(dir / "w.safetensors", kTiny / "joint_head_config.json");
}

std::vector<std::vector<float>> run(const HeadWeights& w, const TinyRecord& r, int threads = 1) {
  JointSchemaHead head(w, threads);
  return head.forward(r.rec.hidden, r.rec.n_tokens, r.rec.questions, r.lexical);
}

// README "Clamp detail": exp(clamp(s, max=ln 100)) with the bound f32(ln 100) = 0x40935D8E.
TEST(JointSchemaHead, ScaleClampsBindAtF32Ln100) {
  const TinyRecord r = tiny_record("rec03");
  const float bound = std::bit_cast<float>(0x40935D8Eu);
  ASSERT_EQ(bound, static_cast<float>(std::log(100.0)));
  for (const char* scalar : {"prior_logit_scale", "joint_logit_scale"}) {
    SCOPED_TRACE(scalar);
    const auto at_bound = run(tiny_with_scalar(scalar, bound), r);
    EXPECT_EQ(run(tiny_with_scalar(scalar, 5.25f), r), at_bound);
    EXPECT_EQ(run(tiny_with_scalar(scalar, 1e4f), r), at_bound);
    EXPECT_NE(run(tiny_with_scalar(scalar, std::nextafter(bound, 0.0f)), r), at_bound);
    // No lower bound: a very negative log-scale switches the term off (exp -> 0) without error.
    const auto off = run(tiny_with_scalar(scalar, -200.0f), r);
    for (const auto& q : off) {
      for (float v : q) EXPECT_TRUE(std::isfinite(v));
    }
  }
}

TEST(JointSchemaHead, ThreadCountDoesNotChangeTheLogits) {
  const HeadWeights w =
      HeadWeights::load(kTiny / "joint_head_f32.safetensors", kTiny / "joint_head_config.json");
  const TinyRecord r = tiny_record("rec04");
  EXPECT_EQ(run(w, r, 1), run(w, r, 3));
}

// Keeping outgrown buffers (lavapipe's quirk: device::Quirks::stale_descriptor_reads) only changes
// which buffers are held: records that grow, shrink and grow again, with 1 to 3 questions, give the
// bytes of the default head.
TEST(JointSchemaHead, KeptOutgrownBuffersGiveTheSameLogits) {
  const HeadWeights w =
      HeadWeights::load(kTiny / "joint_head_f32.safetensors", kTiny / "joint_head_config.json");
  JointSchemaHead freed(w, 1);
  ggml_backend_ptr cpu(ggml_backend_cpu_init());
  ASSERT_TRUE(cpu);
  JointSchemaHead kept(w, std::move(cpu), clef::device::Quirks{.stale_descriptor_reads = true});
  std::uint32_t seed = 1;
  for (std::int64_t n : {36, 40, 300, 64, 520, 36, 1100, 1100}) {
    // 1 to 3 questions in turn: the graph's shape changes as well as its size
    const testing::RandomRecord r = testing::random_record(w.config(), n, seed, 1 + seed % 3);
    ++seed;
    EXPECT_EQ(kept.forward(r.hidden, n, r.questions, r.lexical),
              freed.forward(r.hidden, n, r.questions, r.lexical))
        << n << " tokens";
  }
}

TEST(JointSchemaHead, RefusesInconsistentInputs) {
  const HeadWeights w =
      HeadWeights::load(kTiny / "joint_head_f32.safetensors", kTiny / "joint_head_config.json");
  JointSchemaHead head(w, 1);
  const TinyRecord r = tiny_record("rec01");
  const auto& hidden = r.rec.hidden;
  const std::int64_t t = r.rec.n_tokens;
  auto expect_refused = [&](std::span<const float> h, std::int64_t n, std::vector<HeadQuestion> qs,
                            std::span<const float> lex) {
    try {
      (void)head.forward(h, n, qs, lex);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
    }
  };
  expect_refused(hidden, t, {}, {});
  expect_refused(std::span(hidden).first(hidden.size() - 1), t, r.rec.questions, r.lexical);
  expect_refused(hidden, t, r.rec.questions, std::span(r.lexical).first(64));
  auto qs = r.rec.questions;
  qs[0].options[0] = {5, 5};  // empty span
  expect_refused(hidden, t, qs, r.lexical);
  qs = r.rec.questions;
  qs[1].question = {t - 1, t + 1};  // past the end
  expect_refused(hidden, t, qs, r.lexical);
  qs = r.rec.questions;
  qs[0].type = 3;
  expect_refused(hidden, t, qs, r.lexical);
  qs = r.rec.questions;
  qs[0].options.clear();
  expect_refused(hidden, t, qs, r.lexical);
  // The head stays usable after refusals.
  const auto logits = head.forward(hidden, t, r.rec.questions, r.lexical);
  ASSERT_EQ(logits.size(), r.rec.logits_f32.size());
  EXPECT_NEAR(logits[0][0], r.rec.logits_f32[0][0], 1e-5);
}

}  // namespace
}  // namespace clef::head
