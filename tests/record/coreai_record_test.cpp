// The record encoder with the real Qwen3.5 vocabulary (LlamaTokenizer, qwen2 pre-tokenizer + NFC)
// against the authors' real-vocabulary readout (tests/data/oracle/coreai/fixture.json): every
// run's ids, spans, option ids and usage, and the contract's fixed pieces.
//
// The real vocabulary (248,077 tokens) is not in this repository (llama.cpp's
// ggml-vocab-qwen35.gguf is a 151,936-token test vocabulary with other ids): set
// CLEF_QWEN35_VOCAB to a GGUF that holds it (e.g. the clef-flash backbone GGUF; only its
// vocabulary is loaded). Without it these tests are skipped.

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "llama_backend_env.hpp"
#include "oracle_files.hpp"
#include "record/encode.hpp"
#include "record/llama_tokenizer.hpp"
#include "record/llama_vocab.hpp"
#include "request/parse.hpp"

namespace clef {
namespace {

using record::TokenId;

[[maybe_unused]] const ::testing::Environment* const kBackend =
    ::testing::AddGlobalTestEnvironment(new test::LlamaBackendEnvironment);  // gtest owns it

std::size_t to_size(const json::Value& v) {
  return std::stoull(v.integer_digits());
}

std::vector<TokenId> to_ids(const json::Value& v) {
  std::vector<TokenId> ids;
  for (const json::Value& x : v.items()) ids.push_back(std::stoi(x.integer_digits()));
  return ids;
}

record::Span to_span(const json::Value& v) {
  return {to_size(v.items().at(0)), to_size(v.items().at(1))};
}

class CoreaiRecords : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* vocab = std::getenv("CLEF_QWEN35_VOCAB");
    if (vocab == nullptr || *vocab == '\0') return;
    fixture_ = std::make_unique<json::Value>(
        json::parse(test::read_text(std::string(CLEF_TEST_DATA) + "/oracle/coreai/fixture.json")));
    // The file the variable names (the bundled test vocabulary has other ids).
    model_ = std::make_unique<record::VocabModel>(
        record::VocabModel::load(vocab, record::PreTokenizer::qwen2));
  }
  static void TearDownTestSuite() {
    model_.reset();
    fixture_.reset();
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "CLEF_QWEN35_VOCAB is not set (the real Qwen3.5 vocabulary)";
  }
  static const json::Value& fixture() { return *fixture_; }
  static record::LlamaTokenizer tokenizer() { return record::LlamaTokenizer(model_->vocab()); }

 private:
  static inline std::unique_ptr<json::Value> fixture_;
  static inline std::unique_ptr<record::VocabModel> model_;
};

TEST_F(CoreaiRecords, FixedPiecesHaveTheContractIds) {
  const record::LlamaTokenizer tok = tokenizer();
  const json::Value& contract = *fixture().find("contract");
  for (const char* piece : {"prefix", "schema_header", "field_example", "suffix"}) {
    const json::Value& p = *contract.find(piece);
    EXPECT_EQ(tok.tokenize(p.find("text")->as_string()), to_ids(*p.find("ids"))) << piece;
  }
  for (const auto& [text, id] : contract.find("special_ids")->members()) {
    EXPECT_EQ(tok.special_id(text), std::stoi(id.integer_digits())) << text;
  }
}

TEST_F(CoreaiRecords, EveryRunEncodesToTheReferenceIdsAndSpans) {
  const record::LlamaTokenizer tok = tokenizer();
  std::map<std::string, const json::Value*> requests;
  for (const json::Value& r : fixture().find("records")->items()) {
    requests[r.find("id")->as_string()] = r.find("request");
  }
  int runs = 0, ids_equal = 0, ids_withheld = 0, requests_withheld = 0;
  for (const json::Value& run : fixture().find("runs")->items()) {
    const std::string name = run.find("id")->as_string() + "/" + run.find("arm")->as_string();
    SCOPED_TRACE(name);
    ASSERT_TRUE(requests.count(run.find("id")->as_string()));
    const json::Value& body = *requests[run.find("id")->as_string()];
    if (body.find("withheld") != nullptr) {  // request text not published (names screen)
      ++requests_withheld;
      continue;
    }
    const request::Request req = request::parse_request(body);
    record::EncodeOptions options;
    const std::size_t n_image = to_size(*run.find("n_image_tokens"));
    if (n_image > 0) options.image_tokens = {n_image};
    const record::Record rec = record::encode_record(req, tok, options);
    ++runs;
    EXPECT_EQ(rec.input_tokens(), to_size(*run.find("tokens")));
    const json::Value& ids = *run.find("ids");
    if (ids.is_array()) {
      EXPECT_EQ(rec.ids, to_ids(ids));
      ids_equal += rec.ids == to_ids(ids);
    } else {
      ++ids_withheld;
    }
    if (n_image > 0) {
      ASSERT_EQ(rec.images.size(), 1u);
      EXPECT_EQ(rec.images[0].first_token, to_size(*run.find("token_offset")) + 1);
      EXPECT_EQ(rec.prefix_tokens, to_size(*run.find("token_offset")));
    }
    const auto& questions = run.find("questions")->items();
    ASSERT_EQ(rec.questions.size(), questions.size());
    for (std::size_t k = 0; k < questions.size(); ++k) {
      const json::Value& q = questions[k];
      EXPECT_EQ(rec.questions[k].question_id, q.find("question_id")->as_string());
      EXPECT_EQ(request::type_name(rec.questions[k].type), q.find("type")->as_string());
      EXPECT_EQ(rec.questions[k].question_span, to_span(*q.find("question_span")));
      std::vector<record::Span> spans;
      for (const json::Value& s : q.find("option_spans")->items()) spans.push_back(to_span(s));
      EXPECT_EQ(rec.questions[k].option_spans, spans);
      std::vector<std::string> option_ids;
      for (const json::Value& id : q.find("option_ids")->items())
        option_ids.push_back(id.as_string());
      EXPECT_EQ(rec.questions[k].option_ids, option_ids);
    }
  }
  std::printf("%d runs encoded; ids equal on %d, ids withheld on %d; %d runs without a request\n",
              runs, ids_equal, ids_withheld, requests_withheld);
  EXPECT_EQ(ids_equal + ids_withheld, runs);
}

}  // namespace
}  // namespace clef
