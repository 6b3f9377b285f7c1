// The answer builder against the reference's systemone_answer: every record of
// tests/data/oracle/head/*/recNN (and of the config dirs in CLEF_EXTRA_HEAD_ORACLES), and the
// real-model responses of tests/data/oracle/coreai/fixture.json. Answers are compared as JSON
// values (same keys, same order, numbers bit-equal, checked through their repr spelling too).

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "decision/answer.hpp"
#include "decision/response.hpp"
#include "decision/softmax.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "request/parse.hpp"
#include "support/oracle_dirs.hpp"

namespace clef {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<float> floats(const json::Value& list) {
  std::vector<float> out;
  for (const json::Value& x : list.items()) {
    const double d = x.is_float() ? x.as_double() : std::stod(x.integer_digits());
    out.push_back(static_cast<float>(d));
    EXPECT_EQ(static_cast<double>(out.back()), d) << "not an exact f32 value";
  }
  return out;
}

std::vector<double> widened(const std::vector<float>& p) {
  return {p.begin(), p.end()};
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Counts {
  int answers = 0, answers_equal = 0, softmax_rows = 0, softmax_equal = 0;
};

// One head-oracle record: systemone_answers from probs_f32, and softmax(logits_f32) == probs_f32.
void check_head_record(const fs::path& file, Counts& counts) {
  SCOPED_TRACE(file.string());
  const json::Value rec = json::parse(read_text(file));
  const auto& questions = rec.find("questions")->items();
  const auto& asked = rec.find("systemone_questions")->items();
  const auto& answers = rec.find("systemone_answers")->items();
  const auto& probs = rec.find("probs_f32")->items();
  const auto& logits = rec.find("logits_f32")->items();
  ASSERT_EQ(asked.size(), questions.size());
  ASSERT_EQ(answers.size(), questions.size());
  std::vector<json::Value::Member> members;
  for (std::size_t k = 0; k < questions.size(); ++k) {
    members.emplace_back(questions[k].find("question_id")->as_string(), asked[k]);
  }
  const request::Request req = request::parse_request(
      json::Value::object({{"state", json::Value()}, {"questions", json::Value::object(members)}}));
  for (std::size_t k = 0; k < questions.size(); ++k) {
    const request::Question& q = req.questions[k];
    std::vector<std::string> ids;
    for (const auto& o : q.options) ids.push_back(o.id);
    std::vector<std::string> want_ids;
    for (const auto& id : questions[k].find("option_ids")->items())
      want_ids.push_back(id.as_string());
    EXPECT_EQ(ids, want_ids) << "model option order";

    const std::vector<float> p = floats(probs[k]);
    const json::Value got = decision::answer_question(q, widened(p));
    EXPECT_EQ(json::dumps_unsorted(got), json::dumps_unsorted(answers[k])) << q.id;
    EXPECT_TRUE(got == answers[k]) << q.id;
    ++counts.answers;
    counts.answers_equal += got == answers[k];

    const std::vector<float> sm = decision::softmax_f32(floats(logits[k]));
    EXPECT_TRUE(bit_equal(sm, p)) << q.id << ": softmax(logits_f32) != probs_f32";
    ++counts.softmax_rows;
    counts.softmax_equal += bit_equal(sm, p);
  }
}

Counts run_config(const fs::path& dir) {
  Counts counts;
  std::vector<fs::path> records;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && fs::exists(e.path() / "record.json"))
      records.push_back(e.path() / "record.json");
  }
  std::sort(records.begin(), records.end());
  EXPECT_FALSE(records.empty()) << dir;
  for (const auto& r : records) check_head_record(r, counts);
  std::printf("%s: %zu records, %d/%d answers equal, %d/%d softmax rows bit-equal\n",
              dir.string().c_str(), records.size(), counts.answers_equal, counts.answers,
              counts.softmax_equal, counts.softmax_rows);
  return counts;
}

TEST(AnswerOracle, HeadFixtures) {
  for (const char* config : {"tiny", "small"}) {
    const Counts c = run_config(fs::path(CLEF_TEST_DATA) / "oracle/head" / config);
    EXPECT_EQ(c.answers_equal, c.answers);
    EXPECT_GT(c.answers, 0);
  }
}

TEST(AnswerOracle, ExtraHeadFixtures) {
  const auto dirs = test::extra_head_config_dirs();
  if (dirs.empty()) GTEST_SKIP() << "CLEF_EXTRA_HEAD_ORACLES is not set";
  for (const auto& dir : dirs) {
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    const Counts c = run_config(dir);
    EXPECT_EQ(c.answers_equal, c.answers);
  }
}

// The real model's responses: answers from the reference's f32 probabilities, the whole response
// (model, answers in question order, usage) from the logits.
TEST(AnswerOracle, RealModelResponses) {
  const json::Value fixture =
      json::parse(read_text(fs::path(CLEF_TEST_DATA) / "oracle/coreai/fixture.json"));
  std::map<std::string, const json::Value*> requests;
  for (const json::Value& r : fixture.find("records")->items()) {
    requests[r.find("id")->as_string()] = r.find("request");
  }
  int runs = 0, responses_equal = 0, rows = 0, softmax_equal = 0, from_logits_equal = 0;
  int withheld = 0;
  for (const json::Value& run : fixture.find("runs")->items()) {
    const std::string name = run.find("id")->as_string() + "/" + run.find("arm")->as_string();
    SCOPED_TRACE(name);
    const json::Value& body = *requests.at(run.find("id")->as_string());
    if (body.find("withheld") != nullptr) {  // request not published (names screen)
      ++withheld;
      continue;
    }
    const request::Request req = request::parse_request(body);
    const json::Value& want = *run.find("systemone_response");
    const auto& questions = run.find("questions")->items();
    ASSERT_EQ(questions.size(), req.questions.size());
    std::vector<json::Value::Member> answers;
    std::vector<std::vector<float>> logits;
    for (std::size_t k = 0; k < questions.size(); ++k) {
      const std::vector<float> p = floats(*questions[k].find("probs"));
      answers.emplace_back(req.questions[k].id,
                           decision::answer_question(req.questions[k], widened(p)));
      logits.push_back(floats(*questions[k].find("logits")));
      // torch 2.9 (this oracle) sums differently from torch 1.13: allow 2 ulp, count exact rows.
      const std::vector<float> sm = decision::softmax_f32(logits.back());
      ++rows;
      softmax_equal += bit_equal(sm, p);
      for (std::size_t i = 0; i < p.size(); ++i) {
        EXPECT_LE(std::abs(std::bit_cast<std::int32_t>(sm[i]) - std::bit_cast<std::int32_t>(p[i])),
                  2)
            << req.questions[k].id << " option " << i;
      }
    }
    const std::size_t tokens = std::stoull(run.find("tokens")->integer_digits());
    const json::Value from_probs = json::Value::object(
        {{"model", json::Value::string(req.model)},
         {"answers", json::Value::object(answers)},
         {"usage", json::Value::object(
                       {{"input_tokens", json::Value::integer(static_cast<std::int64_t>(tokens))},
                        {"output_tokens", json::Value::integer(std::int64_t{0})}})}});
    EXPECT_EQ(json::dumps_unsorted(from_probs), json::dumps_unsorted(want));
    ++runs;
    responses_equal += from_probs == want;
    // The response built from the logits (our softmax) is the same document: the 2-ulp
    // differences of torch 2.9's sum do not move any 4-decimal rounding here.
    const json::Value from_logits = decision::build_response(req, logits, tokens);
    EXPECT_EQ(decision::response_body(from_logits), json::dumps_unsorted(want));
    from_logits_equal += from_logits == want;
  }
  std::printf(
      "%d/%d real-model responses equal from probs, %d/%d from logits (%d runs without a "
      "request); softmax(logits) bit-equal to probs on %d/%d rows\n",
      responses_equal, runs, from_logits_equal, runs, withheld, softmax_equal, rows);
  EXPECT_EQ(responses_equal, runs);
  EXPECT_GT(runs, 200);
}

}  // namespace
}  // namespace clef
