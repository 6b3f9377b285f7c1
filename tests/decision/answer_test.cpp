// Rounding, ties and shapes of the answer builder (contract 6), with values whose CPython
// results are known: round(0.00025, 4) == 0.0003 (the double lies above the tie), round(x, 4)
// of 1.0 and 0.0, first maximum in criteria order.

#include "decision/answer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decision/response.hpp"
#include "decision/softmax.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "request/parse.hpp"
#include "util/error.hpp"

namespace clef {
namespace {

request::Question question(const std::string& q) {
  return request::parse_request(json::parse(R"({"state": 0, "questions": {"q": )" + q + "}}"))
      .questions.at(0);
}

std::string answer(const std::string& q, const std::vector<double>& probs) {
  return json::dumps_unsorted(decision::answer_question(question(q), probs));
}

TEST(Answer, NoulRoundsPTrue) {
  const std::string noul = R"({"type": "noul"})";
  EXPECT_EQ(answer(noul, {0.00025, 0.99975}), R"({"type":"noul","noul":0.0003})");
  EXPECT_EQ(answer(noul, {1.0, 0.0}), R"({"type":"noul","noul":1.0})");
  EXPECT_EQ(answer(noul, {0.0, 1.0}), R"({"type":"noul","noul":0.0})");
  EXPECT_EQ(answer(noul, {0.99996, 0.00004}), R"({"type":"noul","noul":1.0})");
  EXPECT_EQ(answer(noul, {0.00004, 0.99996}), R"({"type":"noul","noul":0.0})");
  // Decimal ties go by the stored binary value (CPython: round(0.00015, 4) == 0.0001,
  // round(0.00035, 4) == 0.0003, round(0.12345, 4) == 0.1235).
  EXPECT_EQ(answer(noul, {0.00015, 0.99985}), R"({"type":"noul","noul":0.0001})");
  EXPECT_EQ(answer(noul, {0.00035, 0.99965}), R"({"type":"noul","noul":0.0003})");
  EXPECT_EQ(answer(noul, {0.12345, 0.87655}), R"({"type":"noul","noul":0.1235})");
}

TEST(Answer, ChoiceTiesGoToTheFirstInCriteriaOrder) {
  // Model order is a, b, c; the request lists c, b, a.
  const std::string choice = R"({"type": "choice", "criteria": {"c": "C", "b": "B", "a": "A"}})";
  EXPECT_EQ(
      answer(choice, {0.4, 0.4, 0.2}),
      R"({"type":"choice","choice":"b","confidence":0.4,"probabilities":{"c":0.2,"b":0.4,"a":0.4}})");
  EXPECT_EQ(
      answer(choice, {0.25, 0.25, 0.5}),
      R"({"type":"choice","choice":"c","confidence":0.5,"probabilities":{"c":0.5,"b":0.25,"a":0.25}})");
  // All equal: the first criterion.
  EXPECT_EQ(json::dumps_unsorted(
                *decision::answer_question(question(choice), std::vector<double>(3, 1.0 / 3))
                     .find("choice")),
            R"("c")");
  // The maximum is taken before rounding: a (0.33338) beats c (0.33336) though both print 0.3334.
  EXPECT_EQ(
      answer(choice, {0.33338, 0.33326, 0.33336}),
      R"({"type":"choice","choice":"a","confidence":0.3334,"probabilities":{"c":0.3334,"b":0.3333,"a":0.3334}})");
}

TEST(Answer, ScoreIsTheExpectedLevel) {
  const std::string score = R"({"type": "score", "criteria": ["low", null, {"k": 1}]})";
  EXPECT_EQ(
      answer(score, {0.2, 0.3, 0.5}),
      R"({"type":"score","score":1.3,"confidence":0.5,"legend":{"0":"low","1":null,"2":{"k":1}},)"
      R"("probabilities":{"0":0.2,"1":0.3,"2":0.5}})");
  // Sum in double in level order: 0*0.1 + 1*0.7 + 2*0.2.
  EXPECT_EQ(
      answer(score, {0.1, 0.7, 0.2}),
      R"({"type":"score","score":1.1,"confidence":0.7,"legend":{"0":"low","1":null,"2":{"k":1}},)"
      R"("probabilities":{"0":0.1,"1":0.7,"2":0.2}})");
}

TEST(Answer, RefusesMismatchedProbabilities) {
  EXPECT_THROW(decision::answer_question(question(R"({"type": "noul"})"), std::vector<double>{1.0}),
               Error);
}

TEST(Softmax, IsAProbabilityDistributionInF32) {
  const std::vector<float> p = decision::softmax_f32(std::vector<float>{1.0f, 2.0f, 3.0f});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_FLOAT_EQ(p[0] + p[1] + p[2], 1.0f);
  EXPECT_LT(p[0], p[1]);
  EXPECT_LT(p[1], p[2]);
  // Large logits do not overflow (the maximum is subtracted first).
  const std::vector<float> big = decision::softmax_f32(std::vector<float>{1000.0f, 1000.0f});
  EXPECT_EQ(big[0], 0.5f);
  EXPECT_EQ(big[1], 0.5f);
}

TEST(Response, HasModelAnswersInQuestionOrderAndUsage) {
  const request::Request req = request::parse_request(json::parse(
      R"({"model": "m", "state": 0, "questions": {"z": {"type": "noul"}, "a": {"type": "score", "criteria": ["x", "y"]}}})"));
  const json::Value r = decision::build_response(req, {{0.0f, 0.0f}, {0.0f, 0.0f}}, 123);
  EXPECT_EQ(
      decision::response_body(r),
      R"({"model":"m","answers":{"z":{"type":"noul","noul":0.5},"a":{"type":"score","score":0.5,)"
      R"("confidence":0.5,"legend":{"0":"x","1":"y"},"probabilities":{"0":0.5,"1":0.5}}},)"
      R"("usage":{"input_tokens":123,"output_tokens":0}})");
  EXPECT_THROW(decision::build_response(req, {{0.0f, 0.0f}}, 1), Error);
}

}  // namespace
}  // namespace clef
