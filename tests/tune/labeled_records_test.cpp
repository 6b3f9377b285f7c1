// The labeled data of `clef tune`: each bad input refused with the file, the line and the field.
#include "tune/labeled_records.hpp"

#include <gtest/gtest.h>

#include <string>

#include "util/error.hpp"

namespace clef::tune {
namespace {

const std::string kRequest =
    R"("state": "a ticket", "questions": {"team": {"type": "choice", "criteria": {"a": "A", "b": "B"}}, "urgent": {"type": "noul"}})";

std::string line(const std::string& labels) {
  return "{" + kRequest + (labels.empty() ? "" : ", " + labels) + "}\n";
}

/// The message of the refusal of `text`, or "" when it is accepted.
std::string refusal(const std::string& text) {
  try {
    parse_labeled_records(text, "data.jsonl");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_request);
    return e.what();
  }
  return "";
}

TEST(LabeledRecords, ReadsGoldAndTargets) {
  const auto records = parse_labeled_records(
      line(R"("gold": {"urgent": true}, "targets": {"team": {"a": 0.25, "b": 0.75}}, "id": 7)") +
          "\n" + line(R"("gold": {"team": "b", "urgent": null})"),
      "data.jsonl");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].id, "7");
  EXPECT_EQ(records[0].where, "data.jsonl line 1");
  ASSERT_EQ(records[0].labels.size(), 2u);
  EXPECT_EQ(records[0].labels[0].question, "urgent");
  EXPECT_TRUE(records[0].labels[0].gold);
  EXPECT_EQ(records[0].labels[0].probs, (std::vector<std::pair<std::string, double>>{{"true", 1}}));
  EXPECT_FALSE(records[0].labels[1].gold);
  EXPECT_EQ(records[0].labels[1].probs[1], (std::pair<std::string, double>{"b", 0.75}));
  EXPECT_EQ(records[0].request.find("gold"), nullptr);
  EXPECT_EQ(records[0].request.find("targets"), nullptr);
  EXPECT_EQ(records[0].request.find("id"), nullptr);
  // A null gold is no label; line numbers count the blank line.
  EXPECT_EQ(records[1].where, "data.jsonl line 3");
  ASSERT_EQ(records[1].labels.size(), 1u);
}

TEST(LabeledRecords, RefusesEachBadInputNamingTheLine) {
  EXPECT_NE(refusal("").find("data.jsonl: no labeled records"), std::string::npos);
  EXPECT_NE(refusal("\n  \n").find("empty"), std::string::npos);
  EXPECT_NE(
      refusal(line(R"("gold": {"team": "a"})") + "{not json\n").find("data.jsonl line 2: not JSON"),
      std::string::npos);
  EXPECT_NE(refusal("[1, 2]\n").find("line 1: not a JSON object"), std::string::npos);
  EXPECT_NE(refusal(line("")).find("line 1: no label"), std::string::npos);
  EXPECT_NE(refusal(line(R"("gold": {"team": 1.5})")).find("gold.team must be an option id"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("targets": {"team": {"a": -0.5, "b": 1.5}})"))
                .find("targets.team.a is negative"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("targets": {"team": {"a": NaN, "b": 1}})"))
                .find("targets.team.a must be a finite number"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("targets": {"team": {"a": "half", "b": 0.5}})")).find("finite number"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("targets": {"team": {"a": 0.5, "b": 0.4}})"))
                .find("targets.team sums to 0.9"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("targets": {"team": {}})")).find("must be an object"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("gold": {"team": "a"}, "targets": {"team": {"a": 1}})"))
                .find("both gold and targets"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("gold": {"team": "a"}, "id": "x")") +
                    line(R"("gold": {"team": "b"}, "id": "x")"))
                .find("data.jsonl line 2: id \"x\" is also used at data.jsonl line 1"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("gold": {"team": "a"}, "id": [1])")).find("\"id\" must be"),
            std::string::npos);
  EXPECT_NE(refusal(line(R"("gold": [1])")).find("\"gold\" must be an object"), std::string::npos);
  // A reported input: a 400-digit integer target stopped the run with stod's bare message.
  EXPECT_NE(
      refusal(line(R"("targets": {"team": {"a": 1)" + std::string(400, '0') + R"(, "b": 0}})"))
          .find("targets.team.a must be a finite number"),
      std::string::npos);
  // A sum off by rounding only is accepted.
  EXPECT_EQ(refusal(line(R"("targets": {"team": {"a": 0.1, "b": 0.9000000001}})")), "");
}

TEST(LabeledRecords, RefusesARecordInBothTrainingAndValidation) {
  const auto train =
      parse_labeled_records(line(R"("gold": {"team": "a"}, "id": "t1")"), "train.jsonl");
  // The same request with other labels is still the same record.
  const auto same_request = parse_labeled_records(line(R"("gold": {"team": "b"})"), "val.jsonl");
  try {
    check_disjoint(train, same_request);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "val.jsonl line 1: the same request is a training record (train.jsonl line 1)"),
              std::string::npos)
        << e.what();
  }
  const auto same_id = parse_labeled_records(
      "{\"state\": \"another\", \"questions\": {\"team\": {\"type\": \"noul\"}}, \"gold\": "
      "{\"team\": true}, \"id\": \"t1\"}\n",
      "val.jsonl");
  EXPECT_THROW(check_disjoint(train, same_id), Error);
  const auto other = parse_labeled_records(
      "{\"state\": \"another\", \"questions\": {\"team\": {\"type\": \"noul\"}}, \"gold\": "
      "{\"team\": true}}\n",
      "val.jsonl");
  EXPECT_NO_THROW(check_disjoint(train, other));
}

TEST(LabeledRecords, TheSameRequestTwiceInOneFileIsRefused) {
  const auto records = parse_labeled_records(
      line(R"("gold": {"team": "a"})") + line(R"("gold": {"team": "b"}, "id": "other")"),
      "data.jsonl");
  try {
    check_distinct(records);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("data.jsonl line 2: the same request as data.jsonl line 1"),
        std::string::npos)
        << e.what();
  }
}

TEST(LabeledRecords, AMissingFileIsRefusedNamingIt) {
  try {
    load_labeled_records("/nonexistent/data.jsonl");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/data.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clef::tune
