// The joint schema head read from every GGUF layout equals the HF head it was made from: names
// mapped, q/k/v concatenated back, any ggml type dequantized, folded scales used as they are
// (logits within 1e-5 of the raw ones); and every refusal explains itself.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "artifact/layout.hpp"
#include "artifact/open_model.hpp"
#include "gguf/gguf_file.hpp"
#include "head/head_parameters.hpp"
#include "head/joint_schema_head.hpp"
#include "layouts_fixture.hpp"
#include "testmodel/head_writer.hpp"
#include "util/error.hpp"

namespace clef::artifact {
namespace {

namespace fs = std::filesystem;
using test::layout_models;

template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::model_error) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no refusal";
  return "";
}

#define EXPECT_HAS(text, needle) \
  EXPECT_NE(std::string(text).find(needle), std::string::npos) << (text)

/// Fixed random head inputs: 12 tokens, a choice question with 3 options and a noul with 2.
struct HeadInputs {
  std::vector<float> hidden, lexical;
  std::vector<head::HeadQuestion> questions;
  std::int64_t n_tokens = 12;
};

HeadInputs inputs(std::int64_t h) {
  HeadInputs in;
  std::mt19937 gen(1234);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (std::int64_t i = 0; i < in.n_tokens * h; ++i) in.hidden.push_back(n(gen));
  for (std::int64_t i = 0; i < 5 * h; ++i) in.lexical.push_back(n(gen) * 0.1f);
  in.questions = {{1, {0, 2}, {{2, 4}, {4, 5}, {5, 8}}}, {0, {8, 9}, {{9, 10}, {10, 11}}}};
  return in;
}

std::vector<std::vector<float>> logits(const head::HeadWeights& w) {
  const HeadInputs in = inputs(w.config().hidden_size);
  head::JointSchemaHead h(w, 1);
  return h.forward(in.hidden, in.n_tokens, in.questions, in.lexical);
}

void expect_logits_near(const std::vector<std::vector<float>>& a,
                        const std::vector<std::vector<float>>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t q = 0; q < a.size(); ++q) {
    ASSERT_EQ(a[q].size(), b[q].size());
    for (std::size_t o = 0; o < a[q].size(); ++o) {
      EXPECT_NEAR(a[q][o], b[q][o], tol) << "question " << q << " option " << o;
    }
  }
}

/// Every tensor of `a` except the raw scalars equals `b`'s, value for value.
void expect_same_tensors(const head::HeadWeights& a, const head::HeadWeights& b) {
  for (const auto& [name, t] : a.tensors()) {
    if (!b.folded_scales() || name.find('.') != std::string::npos) {
      const head::HeadTensor& u = b.at(name);
      EXPECT_EQ(t.shape, u.shape) << name;
      EXPECT_EQ(t.values, u.values) << name;
    }
  }
}

const head::HeadWeights& head_a() {
  static const head::HeadWeights w = open_model(layout_models().a()).head;
  return w;
}

TEST(Layouts, DetectsEachLayoutFromTheFile) {
  const auto& m = layout_models();
  EXPECT_EQ(detect_layout(gguf::GgufFile(m.a().gguf)), Layout::hf_head);
  EXPECT_EQ(detect_layout(gguf::GgufFile(m.b_bf16().gguf)), Layout::llama_cpp);
  EXPECT_EQ(detect_layout(gguf::GgufFile(m.b_q8().gguf)), Layout::llama_cpp);
  EXPECT_EQ(detect_layout(gguf::GgufFile(m.c().gguf)), Layout::ollama);
}

TEST(Layouts, LayoutBHas160HeadTensorsWithQ8MatricesAnd1DScorerOut) {
  const gguf::GgufFile g(layout_models().b_q8().gguf);
  const head::HeadConfig& c = head_a().config();
  std::size_t n_head = 0;
  for (const auto& t : g.tensors())
    n_head += t.name.starts_with("dec.") || t.name.starts_with("decision.") ||
              t.name.starts_with("token_types.");
  // 20 + 18 per routing layer + 26 per decoder layer (160 for clef-flash's 2 and 4).
  EXPECT_EQ(n_head, 20 + 18 * c.routing_layers + 26 * c.layers);
  EXPECT_EQ(20 + 18 * 2 + 26 * 4, 160);
  EXPECT_EQ(g.tensor("dec.blk.0.cross_attn_q.weight")->type, GGML_TYPE_Q8_0);
  EXPECT_EQ(g.tensor("decision.proj_memory.weight")->type, GGML_TYPE_Q8_0);
  const auto out = g.tensor("decision.scorer_out.weight");
  EXPECT_EQ(out->type, GGML_TYPE_BF16);
  EXPECT_EQ(gguf::ne_string(out->ne), "[" + std::to_string(c.width) + "]");
  EXPECT_EQ(g.tensor("decision.scales")->type, GGML_TYPE_F32);
  EXPECT_EQ(g.get_string("general.architecture"), "clef");
}

TEST(Layouts, LayoutCHeadEqualsTheHfHead) {
  const OpenedModel c = open_model(layout_models().c());
  EXPECT_EQ(c.layout, Layout::ollama);
  EXPECT_FALSE(c.head.folded_scales());
  EXPECT_EQ(c.head.tensors().size(), head_a().tensors().size());
  expect_same_tensors(head_a(), c.head);
  expect_logits_near(logits(head_a()), logits(c.head), 0.0f);
}

TEST(Layouts, LayoutBBf16HeadEqualsTheHfHeadWithFoldedScales) {
  const OpenedModel b = open_model(layout_models().b_bf16());
  EXPECT_EQ(b.layout, Layout::llama_cpp);
  ASSERT_TRUE(b.head.folded_scales());
  const head::FoldedScales want = head::fold_scales(head_a().at("prior_logit_scale").values[0],
                                                    head_a().at("joint_logit_scale").values[0],
                                                    head_a().at("residual_gate").values[0]);
  EXPECT_EQ(b.head.folded_scales()->prior, want.prior);
  EXPECT_EQ(b.head.folded_scales()->joint, want.joint);
  EXPECT_EQ(b.head.folded_scales()->gate, want.gate);
  EXPECT_EQ(b.head.tensors().size() + 3, head_a().tensors().size());
  expect_same_tensors(head_a(), b.head);
  expect_logits_near(logits(head_a()), logits(b.head), 1e-5f);
}

TEST(FoldedScales, FoldingTheHfScalarsGivesLogitsWithin1e5) {
  const head::HeadWeights folded = head_a().folded();
  ASSERT_TRUE(folded.folded_scales());
  EXPECT_GT(folded.folded_scales()->prior, 0.0f);
  const auto a = logits(head_a());
  const auto f = logits(folded);
  expect_logits_near(a, f, 1e-5f);
  // The forward really uses the folded values: a different gate changes the logits.
  head::HeadWeights::TensorMap t = folded.tensors();
  head::FoldedScales other = *folded.folded_scales();
  other.gate *= 0.5f;
  const auto changed = logits(head::HeadWeights::from_tensors(folded.config(), t, other, "test"));
  EXPECT_NE(changed[0][0], f[0][0]);
}

/// `values` (torch [rows, n_per_row]) through a ggml type and back.
std::vector<float> round_trip(const std::vector<float>& values, std::int64_t n_per_row,
                              ggml_type type) {
  const std::int64_t rows = static_cast<std::int64_t>(values.size()) / n_per_row;
  std::vector<char> q(ggml_row_size(type, n_per_row) * static_cast<std::size_t>(rows));
  ggml_quantize_chunk(type, values.data(), q.data(), 0, rows, n_per_row, nullptr);
  std::vector<float> out(values.size());
  ggml_get_type_traits(type)->to_float(q.data(), out.data(),
                                       static_cast<std::int64_t>(values.size()));
  return out;
}

TEST(Layouts, LayoutBQ8HeadMatchesItsDequantizedHfTwin) {
  const OpenedModel b = open_model(layout_models().b_q8());
  // The twin: the HF head with every matrix through Q8_0 (the scorer's 1-D output weight stays
  // BF16, exact for BF16 values; vectors are F32, exact).
  head::HeadWeights::TensorMap twin = head_a().tensors();
  for (auto& [name, t] : twin) {
    if (t.shape.size() == 2 && name != "residual_scorer.3.weight") {
      // in_proj is split into q/k/v before quantization; rows are quantized on their own, so
      // quantizing the packed matrix row by row gives the same values.
      t.values = round_trip(t.values, t.shape[1], GGML_TYPE_Q8_0);
    }
  }
  const head::HeadWeights twin_w =
      head::HeadWeights::from_tensors(head_a().config(), twin, std::nullopt, "twin");
  expect_same_tensors(twin_w, b.head);
  std::size_t changed = 0;
  for (const auto& [name, t] : twin) changed += t.values != head_a().at(name).values;
  EXPECT_GT(changed, 10u) << "Q8_0 must actually change the matrices";
  expect_logits_near(logits(twin_w), logits(b.head), 1e-5f);
}

TEST(Layouts, InfoLinesNameTheDifferencesFromTheReference) {
  const OpenedModel b = open_model(layout_models().b_q8());
  std::string all;
  for (const auto& d : b.differences) all += d + "\n";
  EXPECT_HAS(all, "head width 32 (clef-flash 1024)");
  EXPECT_HAS(all, "Q8_0");
  EXPECT_HAS(all, "decision.scales");
}

// ---- refusals -------------------------------------------------------------------------------

TEST(Refusals, HeadlessQwen35WithoutSafetensors) {
  ModelPaths p;
  p.gguf = layout_models().a().gguf;
  const std::string msg = refusal([&] { open_model(p); });
  EXPECT_HAS(msg, "without a joint schema head");
  EXPECT_HAS(msg, "joint_head.safetensors");
}

TEST(Refusals, HeadOfAnotherHiddenSize) {
  test::TempDir dir;
  head::HeadConfig c{32, 32, 1, 1, 4, 64};
  testmodel::write_head(dir.path(), c, 1);
  ModelPaths p = layout_models().a();
  p.head_weights = dir.path() / "joint_head.safetensors";
  p.head_config = dir.path() / "joint_head_config.json";
  EXPECT_HAS(refusal([&] { open_model(p); }), "does not match the backbone");

  // Layout C whose decision.hidden_size is not the backbone's embedding_length.
  const fs::path c_bad = dir.path() / "c.gguf";
  test::rewrite_gguf(layout_models().c().gguf, c_bad, [](gguf_context* g) {
    gguf_set_val_u32(g, "qwen35.decision.hidden_size", 48);
  });
  EXPECT_HAS(refusal([&] { open_model({c_bad, {}, {}, {}}); }), "clef.hidden_norm.weight");

  // Layout B whose clef.embedding_length disagrees with the head's projections.
  const fs::path b_bad = dir.path() / "b.gguf";
  test::rewrite_gguf(layout_models().b_bf16().gguf, b_bad,
                     [](gguf_context* g) { gguf_set_val_u32(g, "clef.embedding_length", 48); });
  const std::string msg = refusal([&] { open_model({b_bad, {}, {}, {}}); });
  EXPECT_HAS(msg, "decision.hidden_norm.weight has shape [64]");
  EXPECT_HAS(msg, "[48]");
}

TEST(Refusals, UnknownDecisionType) {
  test::TempDir dir;
  const fs::path b = dir.path() / "b.gguf";
  test::rewrite_gguf(layout_models().b_bf16().gguf, b, [](gguf_context* g) {
    gguf_set_val_str(g, "clef.decision.type", "classifier");
  });
  EXPECT_HAS(refusal([&] { open_model({b, {}, {}, {}}); }), "unknown decision.type \"classifier\"");
  const fs::path c = dir.path() / "c.gguf";
  test::rewrite_gguf(layout_models().c().gguf, c, [](gguf_context* g) {
    gguf_set_val_str(g, "qwen35.decision.type", "reranker");
  });
  EXPECT_HAS(refusal([&] { open_model({c, {}, {}, {}}); }), "unknown decision.type \"reranker\"");
}

TEST(Refusals, TiedLmHead) {
  test::TempDir dir;
  const fs::path b = dir.path() / "b.gguf";
  test::rewrite_gguf(layout_models().b_bf16().gguf, b, [](gguf_context*) {}, {"output.weight"});
  const std::string msg = refusal([&] { open_model({b, {}, {}, {}}); });
  EXPECT_HAS(msg, "tied");
  EXPECT_HAS(msg, "output.weight");
}

TEST(Refusals, MissingHeadTensorAndTwoHeads) {
  test::TempDir dir;
  const fs::path b = dir.path() / "b.gguf";
  test::rewrite_gguf(layout_models().b_bf16().gguf, b, [](gguf_context*) {},
                     {"dec.blk.0.cross_attn_k.weight"});
  const std::string msg = refusal([&] { open_model({b, {}, {}, {}}); });
  EXPECT_HAS(msg, "dec.blk.0.cross_attn_k.weight");
  EXPECT_HAS(msg, "missing");

  ModelPaths both = layout_models().b_bf16();
  both.head_weights = layout_models().a().head_weights;
  both.head_config = layout_models().a().head_config;
  EXPECT_HAS(refusal([&] { open_model(both); }), "two heads");
}

TEST(Refusals, ProjectorGivenAsTheModel) {
  EXPECT_HAS(refusal([&] {
               open_model({layout_models().a().mmproj.value(), {}, {}, {}});
             }),
             "vision projector");
}

TEST(Refusals, ScalesThatAreNotFolded) {
  // A layout B file whose decision.scales hold raw log-scales (as the tinygrad port would need):
  // a negative multiplier is refused instead of being re-exponentiated.
  test::TempDir dir;
  const fs::path b = dir.path() / "b.gguf";
  test::rewrite_gguf(
      layout_models().b_bf16().gguf, b, [](gguf_context*) {}, {},
      [](ggml_context* data) {
        static_cast<float*>(ggml_get_tensor(data, "decision.scales")->data)[2] = -2.0f;
      });
  EXPECT_HAS(refusal([&] { open_model({b, {}, {}, {}}); }), "are not folded scales");
}

}  // namespace
}  // namespace clef::artifact
