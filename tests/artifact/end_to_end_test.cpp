// The same request gives the same answer bytes on the tiny test model in layouts A, B and C:
// backbone loaded by artifact::load_backbone (B and C through llama_model_init_from_user with the
// metadata rewritten in memory), tokenizer from that model's vocabulary, lexical rows from its
// output.weight, head from artifact::open_model. The runtime's Backbone cannot take a preloaded
// model yet, so the prefill here mirrors backbone/backbone.cpp (nextn hidden-state rows, one
// chunk, fresh state).

#include <gtest/gtest.h>

#include <llama-ext.h>

#include <fstream>
#include <sstream>

#include "artifact/backbone_loader.hpp"
#include "decision/response.hpp"
#include "head/joint_schema_head.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "layouts_fixture.hpp"
#include "lexical/lexical_table.hpp"
#include "record/encode.hpp"
#include "record/llama_tokenizer.hpp"
#include "record/llama_vocab.hpp"
#include "request/parse.hpp"
#include "runtime/engine/head_inputs.hpp"
#include "util/error.hpp"

namespace clef::artifact {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct ContextFree {
  void operator()(llama_context* c) const noexcept { llama_free(c); }
};

/// One loaded model in one layout, and the decision pipeline over it.
class Pipeline {
 public:
  explicit Pipeline(const ModelPaths& paths)
      : opened_(open_model(paths)),
        overrides_(record::pretokenizer_overrides(record::PreTokenizer::qwen2)),
        model_(load(opened_.backbone, overrides_)),
        head_(opened_.head, 1),
        lexical_(opened_.lexical_gguf.string()),
        tokenizer_(llama_model_get_vocab(model_.get()), record::Normalization::nfc) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = cp.n_ubatch = 2048;
    cp.n_seq_max = 1;
    cp.n_outputs_max = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    ctx_.reset(llama_init_from_model(model_.get(), cp));
    if (!ctx_) throw std::runtime_error("no llama context");
    llama_set_embeddings_nextn(ctx_.get(), true, false);
  }

  /// Final-norm hidden states of `ids`, [T, n_embd].
  std::vector<float> hidden(const std::vector<std::int32_t>& ids) {
    llama_memory_clear(llama_get_memory(ctx_.get()), true);
    llama_batch b = llama_batch_init(static_cast<int>(ids.size()), 0, 1);
    b.n_tokens = static_cast<int>(ids.size());
    for (int i = 0; i < b.n_tokens; ++i) {
      b.token[i] = ids[i];
      b.pos[i] = i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = 0;
    }
    const int rc = llama_decode(ctx_.get(), b);
    llama_batch_free(b);
    if (rc != 0) throw std::runtime_error("llama_decode failed");
    const float* rows = llama_get_embeddings_nextn(ctx_.get());
    const std::size_t n = ids.size() * static_cast<std::size_t>(llama_model_n_embd(model_.get()));
    return std::vector<float>(rows, rows + n);
  }

  /// The response body and the raw logits of `body`.
  std::pair<std::string, std::vector<std::vector<float>>> decide(const json::Value& body) {
    const request::Request req = request::parse_request(body);
    record::EncodeOptions options;
    options.max_length = 2048;
    const record::Record rec = record::encode_record(req, tokenizer_, options);
    const std::vector<float> h = hidden(rec.ids);
    const runtime::HeadInputs in = runtime::make_head_inputs(rec, lexical_);
    auto logits =
        head_.forward(h, static_cast<std::int64_t>(rec.ids.size()), in.questions, in.lexical);
    const json::Value response = decision::build_response(req, logits, rec.input_tokens());
    return {decision::response_body(response), std::move(logits)};
  }

  const OpenedModel& opened() const { return opened_; }

 private:
  static OwnedLlamaModel load(const BackboneSource& source,
                              const std::vector<llama_model_kv_override>& overrides) {
    test::ensure_llama_backend();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.kv_overrides = overrides.data();
    return load_backbone(source, mp);
  }

  OpenedModel opened_;
  std::vector<llama_model_kv_override> overrides_;
  OwnedLlamaModel model_;
  head::JointSchemaHead head_;
  lexical::LexicalTable lexical_;
  record::LlamaTokenizer tokenizer_;
  std::unique_ptr<llama_context, ContextFree> ctx_;
};

std::vector<json::Value> requests() {
  std::vector<json::Value> out = {
      json::parse(read_file(std::string(CLEF_SOURCE_DIR) + "/examples/card.json"))};
  const json::Value fixture =
      json::parse(read_file(std::string(CLEF_TEST_DATA) + "/oracle/coreai/fixture.json"));
  for (const json::Value& rec : fixture.find("records")->items()) {
    if (out.size() >= 8) break;
    if (rec.find("request")->find("state") == nullptr) continue;
    const json::Value* images = rec.find("request")->find("images");
    if (images != nullptr && !images->items().empty()) continue;
    out.push_back(*rec.find("request"));
  }
  out.push_back(json::parse(R"({"state": {"b": [1, 2.5, null, true], "a": "caf\u00e9"},
    "questions": {"ok": {"type": "noul", "criteria": {"true": "fine", "false": null}},
                  "size": {"type": "score", "instructions": null, "criteria": ["s", "m", "l"]},
                  "pick": {"type": "choice", "criteria": {"z": 1, "a": {"x": 2}, "m": null}}}})"));
  return out;
}

class EndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto& m = test::layout_models();
    a_ = std::make_unique<Pipeline>(m.a());
    b_ = std::make_unique<Pipeline>(m.b_bf16());
    b_q8_ = std::make_unique<Pipeline>(m.b_q8());
    c_ = std::make_unique<Pipeline>(m.c());
  }
  static void TearDownTestSuite() {
    a_.reset();
    b_.reset();
    b_q8_.reset();
    c_.reset();
  }
  static std::unique_ptr<Pipeline> a_, b_, b_q8_, c_;
};
std::unique_ptr<Pipeline> EndToEnd::a_, EndToEnd::b_, EndToEnd::b_q8_, EndToEnd::c_;

TEST_F(EndToEnd, BackbonesOfEveryLayoutGiveBitIdenticalHiddenStates) {
  EXPECT_TRUE(a_->opened().backbone.loads_directly);
  EXPECT_FALSE(b_->opened().backbone.loads_directly);
  EXPECT_FALSE(c_->opened().backbone.loads_directly);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 7919) % 5000 + 10);
  const auto ha = a_->hidden(ids);
  EXPECT_EQ(ha, b_->hidden(ids));
  EXPECT_EQ(ha, c_->hidden(ids));
  EXPECT_EQ(ha, b_q8_->hidden(ids));
}

TEST_F(EndToEnd, SameRequestSameAnswerBytesInLayoutsAbc) {
  const auto reqs = requests();
  ASSERT_GE(reqs.size(), 5u);
  for (const json::Value& body : reqs) {
    const auto [ra, la] = a_->decide(body);
    const auto [rb, lb] = b_->decide(body);
    const auto [rc, lc] = c_->decide(body);
    EXPECT_EQ(ra, rc) << "layout C";
    EXPECT_EQ(la, lc) << "layout C logits are bit-identical (same f32 values, raw scalars)";
    // B: the scales are folded in double and rounded to f32: logits within 1e-5, answers equal
    // to 4 decimals.
    EXPECT_EQ(ra, rb) << "layout B";
    ASSERT_EQ(la.size(), lb.size());
    for (std::size_t q = 0; q < la.size(); ++q) {
      ASSERT_EQ(la[q].size(), lb[q].size());
      for (std::size_t o = 0; o < la[q].size(); ++o) EXPECT_NEAR(la[q][o], lb[q][o], 1e-5f);
    }
  }
}

TEST_F(EndToEnd, Q8HeadAnswersWellFormed) {
  // Q8_0 head matrices change the logits a little; the answers stay well formed and close.
  for (const json::Value& body : requests()) {
    const auto [ra, la] = a_->decide(body);
    const auto [rq, lq] = b_q8_->decide(body);
    EXPECT_EQ(json::parse(ra).find("answers")->members().size(),
              json::parse(rq).find("answers")->members().size());
    for (std::size_t q = 0; q < la.size(); ++q) {
      for (std::size_t o = 0; o < la[q].size(); ++o) EXPECT_NEAR(la[q][o], lq[q][o], 0.05f);
    }
  }
}

/// Clef 27B in llama.cpp's `clef` layout (ggml-org/Clef-GGUF) loads as its layout A files do
/// (issue 44): the 27B's ratios (small-27b: 48 value heads on 16 key heads scaled down, a
/// 320-wide head) converted to layout B give layout A's hidden states and answers.
TEST(EndToEnd27bRatios, LayoutBGivesLayoutAsAnswers) {
  const auto& m = test::preset_model("small-27b");
  const ModelPaths a{m.backbone, m.mmproj, m.head, m.head_config};
  test::TempDir dir("clef-27b-layout-b");
  ModelPaths b;
  b.gguf = dir.path() / "clef-27b-ratios.gguf";
  write_layout(a, Layout::llama_cpp, b.gguf, GGML_TYPE_BF16);
  Pipeline pa(a);
  Pipeline pb(b);
  EXPECT_FALSE(pb.opened().backbone.loads_directly);
  EXPECT_EQ(pb.opened().n_embd, 320);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 7919) % 5000 + 10);
  EXPECT_EQ(pa.hidden(ids), pb.hidden(ids));
  for (const json::Value& body : requests()) {
    const auto [ra, la] = pa.decide(body);
    const auto [rb, lb] = pb.decide(body);
    EXPECT_EQ(ra, rb);
    ASSERT_EQ(la.size(), lb.size());
    for (std::size_t q = 0; q < la.size(); ++q) {
      for (std::size_t o = 0; o < la[q].size(); ++o) EXPECT_NEAR(la[q][o], lb[q][o], 1e-5f);
    }
  }
}

}  // namespace
}  // namespace clef::artifact
