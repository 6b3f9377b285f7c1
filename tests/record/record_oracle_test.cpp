// Every case of tests/data/oracle/records/expected.jsonl (and of the *.jsonl files in the
// directories of CLEF_EXTRA_RECORD_ORACLES) through the engine path: json::parse of the exact
// request text, request::parse_request, record::encode_record with the byte-level test tokenizer.
// Encode cases must equal the reference's encode_record exactly; reject cases must be refused
// with a 4xx clef::Error.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/byte_tokenizer.hpp"
#include "json/parse.hpp"
#include "json/value.hpp"
#include "oracle_files.hpp"
#include "record/encode.hpp"
#include "request/parse.hpp"
#include "util/error.hpp"

namespace clef {
namespace {

std::size_t to_size(const json::Value& v) {
  return std::stoull(v.integer_digits());
}

std::vector<record::TokenId> to_ids(const json::Value& v) {
  std::vector<record::TokenId> ids;
  for (const json::Value& x : v.items()) ids.push_back(std::stoi(x.integer_digits()));
  return ids;
}

record::Span to_span(const json::Value& v) {
  return {to_size(v.items().at(0)), to_size(v.items().at(1))};
}

struct Tally {
  int encode_ok = 0, reject_ok = 0, failed = 0;
};

record::Record encode_case(const json::Value& c) {
  const json::Value body = json::parse(c.find("request_text")->as_string());
  const request::Request req = request::parse_request(body);
  record::EncodeOptions options;
  if (const json::Value* m = c.find("max_length")) options.max_length = to_size(*m);
  if (const json::Value* images = c.find("image_tokens")) {
    for (const json::Value& n : images->items()) options.image_tokens.push_back(to_size(n));
  }
  static const test::ByteTokenizer tokenizer;
  return record::encode_record(req, tokenizer, options);
}

template <typename A, typename B>
void compare(std::vector<std::string>& problems, const char* what, const A& got, const B& want) {
  if (!(got == want)) problems.push_back(std::string(what) + " differs");
}

std::string describe(const record::Record& rec) {
  std::string s = "ids:";
  for (record::TokenId id : rec.ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

// Checks one case; returns what differs from the oracle (empty when it matches).
std::vector<std::string> check_case(const json::Value& c) {
  std::vector<std::string> problems;
  const std::string must = c.find("engine_must")->as_string();
  const json::Value& expected = *c.find("expected");
  if (must == "reject") {
    try {
      const record::Record rec = encode_case(c);
      problems.push_back("accepted a request the engine must refuse (" +
                         std::to_string(rec.ids.size()) + " ids)");
    } catch (const Error& e) {
      if (e.status() < 400 || e.status() >= 500) {
        problems.push_back("refused with status " + std::to_string(e.status()));
      }
      // The context-length refusal has the reference's wording (contract 3).
      const json::Value* error = expected.find("error");
      const std::string prefix = "ValueError: schema requires";
      if (error != nullptr && error->as_string().rfind(prefix, 0) == 0 &&
          std::string("ValueError: ") + e.what() != error->as_string()) {
        problems.push_back(std::string("message \"") + e.what() + "\" instead of \"" +
                           error->as_string() + "\"");
      }
    }
    return problems;
  }
  if (must != "encode") problems.push_back("unknown engine_must " + must);
  record::Record rec;
  try {
    rec = encode_case(c);
  } catch (const Error& e) {
    problems.push_back(std::string("refused: ") + e.what() + " (param " + e.param() + ")");
    return problems;
  }
  compare(problems, "input_ids", rec.ids, to_ids(*expected.find("input_ids")));
  compare(problems, "input_tokens", rec.input_tokens(), to_size(*expected.find("input_tokens")));
  compare(problems, "rendered_state", rec.rendered_state,
          expected.find("rendered_state")->as_string());
  const auto& questions = expected.find("questions")->items();
  compare(problems, "number of questions", rec.questions.size(), questions.size());
  for (std::size_t k = 0; k < std::min(rec.questions.size(), questions.size()); ++k) {
    const json::Value& q = questions[k];
    const record::QuestionRecord& got = rec.questions[k];
    compare(problems, "question_id", got.question_id, q.find("question_id")->as_string());
    compare(problems, "question_type", static_cast<std::size_t>(got.type),
            to_size(*q.find("question_type")));
    compare(problems, "question_span", got.question_span, to_span(*q.find("question_span")));
    std::vector<record::Span> spans;
    for (const json::Value& s : q.find("option_spans")->items()) spans.push_back(to_span(s));
    compare(problems, "option_spans", got.option_spans, spans);
    std::vector<std::string> option_ids;
    for (const json::Value& id : q.find("option_ids")->items())
      option_ids.push_back(id.as_string());
    compare(problems, "option_ids", got.option_ids, option_ids);
  }
  if (!problems.empty()) problems.push_back(describe(rec));
  return problems;
}

Tally run_file(const std::filesystem::path& path) {
  Tally tally;
  const std::string text = test::read_text(path);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const json::Value c = json::parse(line);
    const bool reject = c.find("engine_must")->as_string() == "reject";
    const std::vector<std::string> problems = check_case(c);
    if (problems.empty()) {
      ++(reject ? tally.reject_ok : tally.encode_ok);
      continue;
    }
    ++tally.failed;
    std::string report = "case " + c.find("name")->as_string() + ":";
    for (const std::string& p : problems) report += "\n  " + p;
    ADD_FAILURE() << report;
  }
  std::printf("%s: %d encode cases equal, %d reject cases refused, %d failed\n",
              path.string().c_str(), tally.encode_ok, tally.reject_ok, tally.failed);
  return tally;
}

TEST(RecordOracle, EveryBuiltInCase) {
  const Tally t = run_file(std::filesystem::path(CLEF_TEST_DATA) / "oracle/records/expected.jsonl");
  EXPECT_EQ(t.failed, 0);
  EXPECT_EQ(t.encode_ok + t.reject_ok, 80);
}

TEST(RecordOracle, EveryExtraCase) {
  const auto dirs = test::env_dirs("CLEF_EXTRA_RECORD_ORACLES");
  if (dirs.empty()) GTEST_SKIP() << "CLEF_EXTRA_RECORD_ORACLES is not set";
  int files = 0;
  for (const auto& dir : dirs) {
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    for (const auto& file : test::files_with_suffix(dir, ".jsonl")) {
      ++files;
      EXPECT_EQ(run_file(file).failed, 0) << file;
    }
  }
  EXPECT_GT(files, 0) << "no *.jsonl in CLEF_EXTRA_RECORD_ORACLES";
}

}  // namespace
}  // namespace clef
