// request::parse_request: the reference's option order and defaults (contract 1), and every
// refusal with its status and dotted field path.

#include "request/parse.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/render.hpp"
#include "util/error.hpp"

namespace clef {
namespace {

using request::QuestionType;

request::Request parse(const std::string& text, const request::RequestLimits& limits = {}) {
  return request::parse_request(json::parse(text), limits);
}

std::vector<std::string> option_ids(const request::Question& q) {
  std::vector<std::string> ids;
  for (const auto& o : q.options) ids.push_back(o.id);
  return ids;
}

// The refusal of `text`: its HTTP status and param.
struct Refusal {
  int status = 0;
  std::string param;
  std::string message;
};

Refusal refusal(const std::string& text, const request::RequestLimits& limits = {}) {
  try {
    parse(text, limits);
  } catch (const Error& e) {
    return {e.status(), e.param(), e.what()};
  }
  return {};
}

TEST(ParseRequest, CardExample) {
  const request::Request r = parse(
      R"({"model": "clef-flash", "state": "Our checkout is down.", "questions": {)"
      R"("department": {"type": "choice", "instructions": "Which team?", "criteria": {"technical": "Bugs", "billing": "Payments"}},)"
      R"("urgency": {"type": "score", "criteria": ["Can wait", "This week", "Today"]},)"
      R"("outage": {"type": "noul", "instructions": "Is a service down?"}}})");
  EXPECT_EQ(r.model, "clef-flash");
  EXPECT_EQ(json::render(r.state), "Our checkout is down.");
  ASSERT_EQ(r.questions.size(), 3u);
  const auto& dept = r.questions[0];
  EXPECT_EQ(dept.id, "department");
  EXPECT_EQ(dept.type, QuestionType::choice);
  EXPECT_EQ(option_ids(dept), (std::vector<std::string>{"billing", "technical"}));
  EXPECT_EQ(dept.criteria_order, (std::vector<std::size_t>{1, 0}));  // request order
  EXPECT_EQ(json::render(dept.instructions), "Which team?");
  const auto& urgency = r.questions[1];
  EXPECT_EQ(urgency.type, QuestionType::score);
  EXPECT_EQ(option_ids(urgency), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(json::render(urgency.options[2].description), "Today");
  EXPECT_EQ(json::render(urgency.instructions), "urgency");  // missing -> question id
  const auto& outage = r.questions[2];
  EXPECT_EQ(option_ids(outage), (std::vector<std::string>{"true", "false"}));
  EXPECT_EQ(json::render(outage.options[0].description),
            "The proposition is true or the answer is yes.");
  EXPECT_EQ(json::render(outage.options[1].description),
            "The proposition is false or the answer is no.");
  EXPECT_TRUE(r.images.empty());
}

TEST(ParseRequest, ModelDefaultsToClefFlash) {
  EXPECT_EQ(parse(R"({"state": 1, "questions": {"q": {"type": "noul"}}})").model, "clef-flash");
  EXPECT_EQ(parse(R"({"model": "x", "state": 1, "questions": {"q": {"type": "noul"}}})").model,
            "x");
}

TEST(ParseRequest, ChoiceIdsSortByCodePoint) {
  const auto r = parse(
      R"({"state": null, "questions": {"q": {"type": "choice", "criteria":)"
      R"({"b": 1, "a": 2, "B": 3, "10": 4, "9": 5, "\u00e9": 6, "z": null, "_": 7, "\ud83d\ude00": 8, "\uffff": 9}}}})");
  const auto& q = r.questions[0];
  EXPECT_EQ(option_ids(q), (std::vector<std::string>{"10", "9", "B", "_", "a", "b", "z", "\xC3\xA9",
                                                     "\xEF\xBF\xBF", "\xF0\x9F\x98\x80"}));
  // criteria_order maps request order to model positions: "b" is model option 5, ...
  EXPECT_EQ(q.criteria_order, (std::vector<std::size_t>{5, 4, 2, 0, 1, 7, 6, 3, 9, 8}));
  EXPECT_TRUE(q.options[6].description.is_null());  // "z": null is kept as null
}

TEST(ParseRequest, NoulCriteriaOverrideOnlyTrueAndFalse) {
  const auto r =
      parse(R"({"state": "s", "questions": {)"
            R"("a": {"type": "noul", "criteria": {"maybe": "x", "false": "No", "true": "Yes"}},)"
            R"("b": {"type": "noul", "criteria": {"true": null}},)"
            R"("c": {"type": "noul", "criteria": null},)"
            R"("d": {"type": "noul", "criteria": []}}})");
  EXPECT_EQ(option_ids(r.questions[0]), (std::vector<std::string>{"true", "false"}));
  EXPECT_EQ(json::render(r.questions[0].options[0].description), "Yes");
  EXPECT_EQ(json::render(r.questions[0].options[1].description), "No");
  EXPECT_TRUE(r.questions[1].options[0].description.is_null());
  EXPECT_EQ(json::render(r.questions[1].options[1].description),
            "The proposition is false or the answer is no.");
  EXPECT_EQ(json::render(r.questions[2].options[0].description),
            "The proposition is true or the answer is yes.");
  EXPECT_EQ(json::render(r.questions[3].options[0].description),
            "The proposition is true or the answer is yes.");
}

TEST(ParseRequest, UnknownFieldsAreAcceptedAndListedInOrder) {
  // The reference ignores them; clef says which (issue 45): top level, in a question, in a noul
  // criteria object.
  const auto r =
      parse(R"({"temperature": 0.2, "state": "s", "metadata": {"k": 1}, "questions": {)"
            R"("q": {"type": "noul", "instruction": "Is it?", "criteria": {"maybe": "x"}},)"
            R"("c": {"type": "choice", "criteria": {"a": "A"}, "name": "x"}}, "seed": 7})");
  EXPECT_EQ(r.ignored_fields,
            (std::vector<std::string>{"temperature", "metadata", "seed", "questions.q.instruction",
                                      "questions.q.criteria.maybe", "questions.c.name"}));
  EXPECT_EQ(json::render(r.questions[0].instructions), "q") << "the typo left the id in place";
  EXPECT_TRUE(
      parse(R"({"state": 1, "questions": {"q": {"type": "noul"}}})").ignored_fields.empty());
}

/// A new user's finding: with unknown fields accepted (the default), a misspelled `state` or
/// `questions` was refused as if nothing had been sent; the refusal now names the misspelling.
TEST(ParseRequest, AMissingRequiredFieldNamesItsMisspelling) {
  const Refusal state = refusal(R"({"stat": "s", "questions": {"q": {"type": "noul"}}})");
  EXPECT_EQ(state.param, "state");
  EXPECT_EQ(state.message, "state is required; the request has \"stat\": did you mean state?");
  const Refusal questions = refusal(R"({"state": "s", "questoins": {"q": {"type": "noul"}}})");
  EXPECT_EQ(questions.param, "questions");
  EXPECT_NE(questions.message.find("the request has \"questoins\": did you mean questions?"),
            std::string::npos)
      << questions.message;
  // Nothing close: the plain refusal.
  EXPECT_EQ(refusal(R"({"questions": {"q": {"type": "noul"}}})").message, "state is required");
  EXPECT_EQ(refusal(R"({"state": "s", "questions": {}})").message.find("did you mean"),
            std::string::npos);
}

TEST(ParseRequest, UnknownFieldsRefusedNameTheFieldAndTheNearestKnownOne) {
  request::RequestLimits strict;
  strict.unknown_fields = request::UnknownFields::refuse;
  const Refusal typo = refusal(
      R"({"state": "s", "questions": {"q": {"type": "noul", "instruction": "?"}}})", strict);
  EXPECT_EQ(typo.status, 400);
  EXPECT_EQ(typo.param, "questions.q.instruction");
  EXPECT_EQ(typo.message, "questions.q.instruction: unknown field; did you mean instructions?");
  const Refusal top = refusal(R"({"stat": "s", "questions": {"q": {"type": "noul"}}})", strict);
  EXPECT_EQ(top.param, "stat");
  EXPECT_EQ(top.message, "stat: unknown field; did you mean state?");
  const Refusal far =
      refusal(R"({"state": "s", "temperature": 1, "questions": {"q": {"type": "noul"}}})", strict);
  EXPECT_EQ(far.param, "temperature");
  EXPECT_NE(far.message.find("known here: model, state, questions"), std::string::npos)
      << far.message;
  const Refusal criteria = refusal(
      R"({"state": "s", "questions": {"q": {"type": "noul", "criteria": {"ture": "y"}}}})", strict);
  EXPECT_EQ(criteria.param, "questions.q.criteria.ture");
  EXPECT_NE(criteria.message.find("did you mean true?"), std::string::npos) << criteria.message;
  EXPECT_NO_THROW(parse(R"({"model": "m", "state": "s", "questions": {"q": {"type": "noul",)"
                        R"("instructions": "?", "criteria": {"true": "y"}}}, "max_length": 9})",
                        strict));
}

// Issue 53, found as a new user: "choise" and "Choice" got a 400 that neither echoed the value nor
// named the type meant.
TEST(ParseRequest, AnUnknownQuestionTypeIsEchoedWithTheTypeItMisspells) {
  const Refusal choise = refusal(R"({"state": "s", "questions": {"q": {"type": "choise"}}})");
  EXPECT_EQ(choise.status, 400);
  EXPECT_EQ(choise.param, "questions.q.type");
  EXPECT_EQ(choise.message,
            "questions.q.type \"choise\" is not a question type: did you mean \"choice\"? (it "
            "must be \"noul\", \"choice\" or \"score\")");
  EXPECT_NE(refusal(R"({"state": "s", "questions": {"q": {"type": "Choice"}}})")
                .message.find("did you mean \"choice\"?"),
            std::string::npos);
  const Refusal far = refusal(R"({"state": "s", "questions": {"q": {"type": "ranking"}}})");
  EXPECT_EQ(far.message.find("did you mean"), std::string::npos) << far.message;
  EXPECT_NE(far.message.find("\"ranking\" is not a question type"), std::string::npos)
      << far.message;
  EXPECT_EQ(refusal(R"({"state": "s", "questions": {"q": {}}})").message,
            "questions.q.type is missing: it must be \"noul\", \"choice\" or \"score\"");
  EXPECT_EQ(refusal(R"({"state": "s", "questions": {"q": {"type": 3}}})").param,
            "questions.q.type");
  // A long value is echoed cut to 64 bytes.
  const Refusal longer = refusal(R"({"state": "s", "questions": {"q": {"type": ")" +
                                 std::string(500, 'x') + R"("}}})");
  EXPECT_LT(longer.message.size(), 200u) << longer.message;
}

// Issue 53 (noticed in issues 43-45): an empty key or question id gave an empty path segment
// (`questions..type`).
TEST(ParseRequest, AnEmptyKeyIsQuotedInTheFieldPath) {
  EXPECT_EQ(refusal(R"({"state": "s", "questions": {"": {"type": "x"}}})").param,
            "questions[\"\"].type");
  request::RequestLimits strict;
  strict.unknown_fields = request::UnknownFields::refuse;
  EXPECT_EQ(refusal(R"({"state": "s", "questions": {"q": {"type": "noul", "": 1}}})", strict).param,
            "questions.q[\"\"]");
  EXPECT_EQ(refusal(R"({"state": "s", "": 1, "questions": {"q": {"type": "noul"}}})", strict).param,
            "[\"\"]");
  // Other keys keep their dotted path.
  EXPECT_EQ(refusal(R"({"state": "s", "questions": {"q_1": {"type": "x"}}})").param,
            "questions.q_1.type");
}

TEST(ParseRequest, InstructionsMissingNullOrEmptyBecomeTheId) {
  const auto r = parse(
      R"({"state": "s", "questions": {"m": {"type": "noul"},)"
      R"("n": {"type": "noul", "instructions": null}, "e": {"type": "noul", "instructions": ""},)"
      R"("z": {"type": "noul", "instructions": 0}, "f": {"type": "noul", "instructions": false},)"
      R"("o": {"type": "noul", "instructions": {}}, "s": {"type": "noul", "instructions": " "}}})");
  std::vector<std::string> rendered;
  for (const auto& q : r.questions) rendered.push_back(json::render(q.instructions));
  EXPECT_EQ(rendered, (std::vector<std::string>{"m", "n", "e", "0", "false", "{}", " "}));
}

TEST(ParseRequest, ImagesAreStrings) {
  const auto r = parse(
      R"({"state": "s", "questions": {"q": {"type": "noul"}}, "images": ["data:image/png;base64,AAAA", "x.png"]})");
  EXPECT_EQ(r.images, (std::vector<std::string>{"data:image/png;base64,AAAA", "x.png"}));
  EXPECT_TRUE(parse(R"({"state": "s", "questions": {"q": {"type": "noul"}}, "images": null})")
                  .images.empty());
  EXPECT_NO_THROW(parse(R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": []})"));
}

TEST(ParseRequest, VideosAreFilesOrFrameLists) {
  const auto r = parse(
      R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": ["data:video/mp4;base64,AAAA", {"frames": ["f0", "f1"], "fps": 2.5}]})");
  ASSERT_EQ(r.videos.size(), 2u);
  EXPECT_EQ(r.videos[0].source, "data:video/mp4;base64,AAAA");
  EXPECT_FALSE(r.videos[0].is_frame_list());
  EXPECT_TRUE(r.videos[1].is_frame_list());
  EXPECT_EQ(r.videos[1].frames, (std::vector<std::string>{"f0", "f1"}));
  EXPECT_EQ(r.videos[1].fps, 2.5);
  EXPECT_FALSE(
      parse(
          R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [{"frames": ["g"]}]})")
          .videos[0]
          .fps.has_value());
  EXPECT_TRUE(parse(R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": null})")
                  .videos.empty());
}

TEST(ParseRequest, MediaKwargsAreValidatedAndKept) {
  const auto r = parse(
      R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"fps": 1, "do_sample_frames": false, "min_frames": 2, "max_frames": 16, "min_pixels": 1024, "max_pixels": 65536, "size": {"shortest_edge": 4096, "longest_edge": 8192}, "num_frames": null}})");
  const request::MediaKwargs& k = r.media_kwargs;
  EXPECT_EQ(k.fps, 1.0);
  EXPECT_EQ(k.do_sample_frames, false);
  EXPECT_EQ(k.min_frames, 2);
  EXPECT_EQ(k.max_frames, 16);
  EXPECT_EQ(k.min_pixels, 1024);
  EXPECT_EQ(k.max_pixels, 65536);
  EXPECT_EQ(k.size_shortest_edge, 4096);
  EXPECT_EQ(k.size_longest_edge, 8192);
  EXPECT_FALSE(k.num_frames.has_value());
  EXPECT_TRUE(
      parse(R"({"state": "s", "questions": {"q": {"type": "noul"}}})").media_kwargs.empty());
}

TEST(ParseRequest, MaxLengthAndMaxStateTokensAreKeptOrRefusedByName) {
  const std::string head = R"({"state": "s", "questions": {"q": {"type": "noul"}})";
  const auto r =
      parse(std::string(head).append(R"(, "max_length": 512, "max_state_tokens": 100})"));
  EXPECT_EQ(r.max_length, 512);
  EXPECT_EQ(r.max_state_tokens, 100);
  // More than any context means no cut: kept as the largest int (up to 2^40, as media_kwargs).
  const auto huge = parse(std::string(head).append(R"(, "max_state_tokens": 1099511627776})"));
  EXPECT_EQ(huge.max_state_tokens, std::numeric_limits<int>::max());
  const auto unset = parse(std::string(head).append(R"(, "max_length": null})"));
  EXPECT_FALSE(unset.max_length.has_value());
  EXPECT_FALSE(unset.max_state_tokens.has_value());
  for (const char* bad : {R"("max_length": 0)", R"("max_length": 1.5)", R"("max_length": "5")",
                          R"("max_length": 99999999999999)", R"("max_state_tokens": false)",
                          R"("max_state_tokens": [3])"}) {
    std::string text = head;
    text.append(", ").append(bad).append("}");
    const Refusal r = refusal(text);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.param, std::string(bad).substr(1, r.param.size())) << bad;
    EXPECT_FALSE(r.param.empty()) << bad;
  }
}

TEST(ParseRequest, TooManyVideosOrFramesAre413) {
  request::RequestLimits limits;
  limits.max_videos = 1;
  limits.max_listed_frames = 2;
  const auto status = [&](const std::string& text) {
    try {
      request::parse_request(json::parse(text), limits);
    } catch (const Error& e) {
      return e.status();
    }
    return 0;
  };
  EXPECT_EQ(status(R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": ["a", "b"]})"),
            413);
  EXPECT_EQ(
      status(
          R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [{"frames": ["a", "b", "c"]}]})"),
      413);
}

TEST(ParseRequest, RefusalsNameTheField) {
  struct Case {
    const char* text;
    const char* param;
  };
  const Case cases[] = {
      {R"([1])", ""},
      {R"({"model": 7, "state": "s", "questions": {"q": {"type": "noul"}}})", "model"},
      {R"({"model": null, "state": "s", "questions": {"q": {"type": "noul"}}})", "model"},
      {R"({"questions": {"q": {"type": "noul"}}})", "state"},
      {R"({"state": "s"})", "questions"},
      {R"({"state": "s", "questions": {}})", "questions"},
      {R"({"state": "s", "questions": [{"type": "noul"}]})", "questions"},
      {R"({"state": "s", "questions": {"q": "noul"}})", "questions.q"},
      {R"({"state": "s", "questions": {"q": {"instructions": "x"}}})", "questions.q.type"},
      {R"({"state": "s", "questions": {"q": {"type": "bool"}}})", "questions.q.type"},
      {R"({"state": "s", "questions": {"q": {"type": 1}}})", "questions.q.type"},
      {R"({"state": "s", "questions": {"q": {"type": "Choice", "criteria": {"a": 1}}}})",
       "questions.q.type"},
      {R"({"state": "s", "questions": {"ok": {"type": "noul"}, "q": {"type": "choice"}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "choice", "criteria": {}}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "choice", "criteria": ["a", "b"]}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "score", "criteria": []}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "score"}}})", "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "score", "criteria": {"lo": "Low"}}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "score", "criteria": "abc"}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "noul", "criteria": ["yes", "no"]}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "noul", "criteria": "yes"}}})",
       "questions.q.criteria"},
      {R"({"state": "s", "questions": {"a.b": {"type": "noul", "criteria": 1}}})",
       "questions.a.b.criteria"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "images": "x.png"})", "images"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "images": ["a", 3]})", "images.1"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": "v.mp4"})", "videos"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [3]})", "videos.0"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [""]})", "videos.0"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [{"frames": []}]})",
       "videos.0.frames"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [{"frames": ["a", 1]}]})",
       "videos.0.frames.1"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [{"frames": ["a"], "fps": 0}]})",
       "videos.0.fps"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "videos": [{"frames": ["a"], "rate": 2}]})",
       "videos.0.rate"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": []})",
       "media_kwargs"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"fps": "2"}})",
       "media_kwargs.fps"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"fps": -1}})",
       "media_kwargs.fps"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"num_frames": 2.5}})",
       "media_kwargs.num_frames"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"num_frames": 0}})",
       "media_kwargs.num_frames"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"do_sample_frames": 1}})",
       "media_kwargs.do_sample_frames"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"max_pixels": 99999999999999999999}})",
       "media_kwargs.max_pixels"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"size": {"shortest_edge": 1}}})",
       "media_kwargs.size"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"size": {"shortest_edge": 1, "longest_edge": 2, "height": 3}}})",
       "media_kwargs.size.height"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"resample": 3}})",
       "media_kwargs.resample"},
      {R"({"state": "s", "questions": {"q": {"type": "noul"}}, "media_kwargs": {"fps": 1, "num_frames": 4}})",
       "media_kwargs"},
  };
  for (const Case& c : cases) {
    const Refusal r = refusal(c.text);
    EXPECT_EQ(r.status, 400) << c.text;
    EXPECT_EQ(r.param, c.param) << c.text;
    if (*c.param != '\0') {
      EXPECT_NE(r.message.find(c.param), std::string::npos) << r.message;
    }
  }
}

std::string many_questions(int n) {
  std::string text = R"({"state": "s", "questions": {)";
  for (int i = 0; i < n; ++i) {
    text.append(i ? "," : "").append("\"q").append(std::to_string(i));
    text.append(R"(": {"type": "noul"})");
  }
  return text + "}}";
}

std::string choice_with(int n) {
  std::string text = R"({"state": "s", "questions": {"q": {"type": "choice", "criteria": {)";
  for (int i = 0; i < n; ++i)
    text.append(i ? "," : "").append("\"o").append(std::to_string(i)).append("\": 1");
  return text + "}}}}";
}

std::string score_with(int n) {
  std::string text = R"({"state": "s", "questions": {"q": {"type": "score", "criteria": [)";
  for (int i = 0; i < n; ++i) text += (i ? ",\"l\"" : "\"l\"");
  return text + "]}}}";
}

std::string images(int n) {
  std::string text = R"({"state": "s", "questions": {"q": {"type": "noul"}}, "images": [)";
  for (int i = 0; i < n; ++i) text += (i ? ",\"x\"" : "\"x\"");
  return text + "]}";
}

TEST(ParseRequest, DefaultLimits) {
  const request::RequestLimits limits;
  EXPECT_EQ(limits.max_questions, 64u);
  EXPECT_EQ(limits.max_options, 255u);
  EXPECT_EQ(limits.max_images, 4u);
  EXPECT_EQ(parse(many_questions(64)).questions.size(), 64u);
  EXPECT_EQ(refusal(many_questions(65)).status, 413);
  EXPECT_EQ(refusal(many_questions(65)).param, "questions");
  EXPECT_EQ(parse(choice_with(255)).questions[0].options.size(), 255u);
  EXPECT_EQ(refusal(choice_with(256)).status, 413);
  EXPECT_EQ(refusal(choice_with(256)).param, "questions.q.criteria");
  EXPECT_EQ(parse(score_with(255)).questions[0].options.size(), 255u);
  EXPECT_EQ(refusal(score_with(256)).param, "questions.q.criteria");
  EXPECT_EQ(parse(images(4)).images.size(), 4u);
  EXPECT_EQ(refusal(images(5)).status, 413);
  EXPECT_EQ(refusal(images(5)).param, "images");
}

TEST(ParseRequest, LimitsAreConfigurable) {
  request::RequestLimits limits;
  limits.max_questions = 2;
  limits.max_options = 3;
  limits.max_images = 0;
  EXPECT_EQ(parse(many_questions(2), limits).questions.size(), 2u);
  EXPECT_EQ(refusal(many_questions(3), limits).param, "questions");
  EXPECT_EQ(refusal(choice_with(4), limits).param, "questions.q.criteria");
  EXPECT_EQ(parse(score_with(3), limits).questions[0].options.size(), 3u);
  EXPECT_EQ(refusal(images(1), limits).param, "images");
}

}  // namespace
}  // namespace clef
