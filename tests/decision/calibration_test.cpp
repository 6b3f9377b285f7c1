// A calibration changes the logits only where it has a scaling for the question (its id's own
// before its type's), round-trips through its file format, refuses a bad file naming the field,
// and the answers without one are the reference's; the confidence kinds on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>

#include "decision/calibration.hpp"
#include "decision/confidence.hpp"
#include "decision/response.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "request/parse.hpp"
#include "util/error.hpp"

namespace clef::decision {
namespace {

request::Request request_of(const std::string& questions) {
  return request::parse_request(json::parse(R"({"state": 0, "questions": )" + questions + "}"));
}

TEST(Calibration, AppliesTheQuestionsOwnScalingThenItsTypes) {
  const request::Request req = request_of(
      R"({"a": {"type": "noul"}, "b": {"type": "choice", "criteria": {"x": "X", "y": "Y"}},
          "c": {"type": "score", "criteria": ["lo", "hi"]}})");
  Calibration c;
  c.by_type[0] = Scaling{2.0, 0.5, 10};
  c.by_question["b"] = Scaling{4.0, 0.0, 10};
  const std::vector<float> logits = {2.0f, -1.0f};
  EXPECT_EQ(c.apply(req.questions[0], logits), (std::vector<float>{1.5f, -0.5f}));  // /2, +0.5
  EXPECT_EQ(c.apply(req.questions[1], logits), (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(c.apply(req.questions[2], logits), logits) << "no scaling for score: unchanged";
}

TEST(Calibration, RoundTripsThroughItsFileFormat) {
  Calibration c;
  c.by_type[1] = Scaling{1.75, 0.0, 120};
  c.by_type[0] = Scaling{0.5, -0.25, 40};
  c.by_question["urgency"] = Scaling{3.0, 0.0, 200};
  const std::string text = json::dumps_unsorted(c.to_json());
  const Calibration back = Calibration::from_json(json::parse(text));
  EXPECT_EQ(back.by_type, c.by_type);
  EXPECT_EQ(back.by_question, c.by_question);
  EXPECT_EQ(text.rfind(R"({"format":"clef-calibration/1","types":{"noul":)", 0), 0u) << text;
}

TEST(Calibration, BadFilesAreRefusedNamingTheField) {
  const std::pair<std::string, const char*> cases[] = {
      {R"({"types": {}})", "format"},
      {R"({"format": "other", "types": {}})", "format"},
      {R"({"format": "clef-calibration/1", "types": {"maybe": {"temperature": 1}}})",
       "types.maybe"},
      {R"({"format": "clef-calibration/1", "types": {"noul": {"temperature": 0}}})",
       "types.noul.temperature"},
      {R"({"format": "clef-calibration/1", "types": {"noul": {"temperature": -2}}})",
       "types.noul.temperature"},
      // A break test: NaN answers from extreme values.
      {R"({"format": "clef-calibration/1", "types": {"noul": {"temperature": 1e-300}}})",
       "types.noul.temperature"},
      {R"({"format": "clef-calibration/1", "types": {"noul": {"temperature": 1, "bias": 1e300}}})",
       "types.noul.bias"},
      {R"({"format": "clef-calibration/1", "types": {"noul": {"bias": 1}}})",
       "types.noul.temperature"},
      {R"({"format": "clef-calibration/1", "questions": {"q": {"temperature": "2"}}})",
       "questions.q.temperature"},
      // A reported input: an integer too large for a double was a bare "stod" (exit 1).
      {R"({"format": "clef-calibration/1", "types": {"noul": {"temperature": 1)" +
           std::string(400, '0') + "}}}",
       "types.noul.temperature"},
  };
  for (const auto& [text, field] : cases) {
    try {
      Calibration::from_json(json::parse(text));
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), 400) << text;
      EXPECT_EQ(e.param(), field) << text << ": " << e.what();
    }
  }
  EXPECT_THROW(load_calibration("/nonexistent/cal.json"), Error);
}

TEST(Calibration, WithoutOneTheResponseIsTheReferences) {
  const request::Request req = request_of(R"({"a": {"type": "noul"}})");
  const std::vector<std::vector<float>> logits = {{0.3f, -0.2f}};
  const json::Value plain = build_response(req, logits, 10);
  Calibration identity;
  identity.by_type[0] = Scaling{1.0, 0.0, 1};
  AnswerOptions same;
  same.calibration = &identity;
  EXPECT_EQ(build_response(req, logits, 10, same), plain);
  Calibration hot;
  hot.by_type[0] = Scaling{0.25, 0.0, 1};
  AnswerOptions sharper;
  sharper.calibration = &hot;
  const double p_plain = plain.find("answers")->find("a")->find("noul")->as_double();
  const double p_hot = build_response(req, logits, 10, sharper)
                           .find("answers")
                           ->find("a")
                           ->find("noul")
                           ->as_double();
  EXPECT_GT(p_hot, p_plain) << "a temperature under 1 sharpens";
}

TEST(Confidence, KindsOnHandComputedCases) {
  const std::vector<double> p = {0.5, 0.25, 0.25};
  EXPECT_DOUBLE_EQ(confidence_of(p, ConfidenceKind::reference), 0.5);
  // H = -(0.5 ln 0.5 + 2 * 0.25 ln 0.25) = 1.5 ln 2; 1 - H / ln 3.
  EXPECT_NEAR(confidence_of(p, ConfidenceKind::entropy), 1 - 1.5 * std::log(2.0) / std::log(3.0),
              1e-12);
  // Gini impurity 1 - (0.25 + 0.0625 * 2) = 0.625, normalized by 2/3: 0.9375; 1 - that.
  EXPECT_NEAR(confidence_of(p, ConfidenceKind::gini), 0.0625, 1e-12);
  EXPECT_NEAR(confidence_of(p, ConfidenceKind::max_over_uniform), (0.5 - 1.0 / 3) / (2.0 / 3),
              1e-12);
  const std::vector<double> sure = {1.0, 0.0};
  for (auto k : {ConfidenceKind::entropy, ConfidenceKind::gini, ConfidenceKind::max_over_uniform}) {
    EXPECT_NEAR(confidence_of(sure, k), 1.0, 1e-12);
  }
  const std::vector<double> flat = {0.5, 0.5};
  for (auto k : {ConfidenceKind::entropy, ConfidenceKind::gini, ConfidenceKind::max_over_uniform}) {
    EXPECT_NEAR(confidence_of(flat, k), 0.0, 1e-12);
  }
  EXPECT_EQ(parse_confidence_kind("gini"), ConfidenceKind::gini);
  EXPECT_THROW(parse_confidence_kind("vibes"), Error);
}

TEST(Confidence, AnswersUseTheChosenKind) {
  const request::Request req =
      request_of(R"({"c": {"type": "choice", "criteria": {"x": "X", "y": "Y", "z": "Z"}}})");
  const std::vector<std::vector<float>> logits = {{1.0f, 0.0f, 0.0f}};
  AnswerOptions entropy;
  entropy.confidence = ConfidenceKind::entropy;
  const json::Value ref = build_response(req, logits, 5);
  const json::Value alt = build_response(req, logits, 5, entropy);
  const double c_ref = ref.find("answers")->find("c")->find("confidence")->as_double();
  const double c_alt = alt.find("answers")->find("c")->find("confidence")->as_double();
  EXPECT_NE(c_ref, c_alt);
  EXPECT_EQ(ref.find("answers")->find("c")->find("probabilities")->members(),
            alt.find("answers")->find("c")->find("probabilities")->members())
      << "only the confidence changes";
}

}  // namespace
}  // namespace clef::decision
