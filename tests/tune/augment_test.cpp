// The recipe's augmentations: a choice question's descriptions permuted among its ids with the
// targets moved along, a yes/no field with the option's probability, each drawn from the seed,
// the epoch and the record alone.
#include "tune/augment.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "json/render.hpp"

namespace clef::tune {
namespace {

LabeledRecord ticket() {
  return parse_labeled_records(
             R"({"state": "ticket", "questions": {"team": {"type": "choice", "instructions": "Which team?", )"
             R"("criteria": {"a": "Alpha", "b": "Bravo", "c": "Charlie", "d": "Delta"}}, )"
             R"("level": {"type": "score", "criteria": ["low", "high"]}}, "gold": {"team": "b"}, )"
             R"("targets": {"level": {"0": 0.25, "1": 0.75}}})",
             "data.jsonl")
      .front();
}

/// The option id whose description is `text` in the augmented team question.
std::string id_saying(const LabeledRecord& r, const std::string& text) {
  for (const auto& [id, d] :
       r.request.find("questions")->find("team")->find("criteria")->members()) {
    if (d.as_string() == text) return id;
  }
  return "";
}

TEST(Augment, NothingAskedIsTheRecordItself) {
  const LabeledRecord r = ticket();
  const LabeledRecord a = augment(r, {}, 1, 1, 0);
  EXPECT_EQ(json::dumps(a.request), json::dumps(r.request));
}

TEST(Augment, ShuffledOptionsCarryTheirTargets) {
  const LabeledRecord r = ticket();
  std::set<std::string> bravo_ids;
  for (int epoch = 1; epoch <= 12; ++epoch) {
    const LabeledRecord a = augment(r, {true, 0.0}, 7, epoch, 3);
    // The gold moved with "Bravo": the label names the id that now says it.
    const std::string bravo = id_saying(a, "Bravo");
    ASSERT_FALSE(bravo.empty());
    bravo_ids.insert(bravo);
    ASSERT_EQ(a.labels.front().question, "team");
    ASSERT_EQ(a.labels.front().probs.size(), 1u);
    EXPECT_EQ(a.labels.front().probs.front().first, bravo);
    // The ids themselves stay (the model orders them); score levels are not shuffled.
    EXPECT_EQ(a.request.find("questions")->find("team")->find("criteria")->members().size(), 4u);
    EXPECT_EQ(json::dumps(*a.request.find("questions")->find("level")),
              json::dumps(*r.request.find("questions")->find("level")));
    // Drawn from the seed, the epoch and the index alone.
    EXPECT_EQ(json::dumps(augment(r, {true, 0.0}, 7, epoch, 3).request), json::dumps(a.request));
  }
  EXPECT_GT(bravo_ids.size(), 1u);
}

TEST(Augment, AYesNoFieldTakesTheOptionsProbability) {
  const LabeledRecord r = ticket();
  int added = 0;
  for (int epoch = 1; epoch <= 8; ++epoch) {
    const LabeledRecord a = augment(r, {false, 1.0}, 3, epoch, 0);
    ASSERT_EQ(a.labels.size(), 3u);
    const QuestionLabel& yes_no = a.labels.back();
    const json::Value* q = a.request.find("questions")->find(yes_no.question);
    ASSERT_NE(q, nullptr) << yes_no.question;
    EXPECT_EQ(q->find("type")->as_string(), "noul");
    ASSERT_EQ(yes_no.probs.size(), 2u);
    EXPECT_DOUBLE_EQ(yes_no.probs[0].second + yes_no.probs[1].second, 1.0);
    // "is_team_b" is true with probability 1, "is_level_1" with 0.75, ...
    const std::string& f = yes_no.question;
    const double p = yes_no.probs[0].second;
    const std::map<std::string, double> expected = {{"is_team_a", 0.0},   {"is_team_b", 1.0},
                                                    {"is_team_c", 0.0},   {"is_team_d", 0.0},
                                                    {"is_level_0", 0.25}, {"is_level_1", 0.75}};
    ASSERT_EQ(expected.count(f), 1u) << f;
    EXPECT_EQ(p, expected.at(f)) << f;
    ++added;
  }
  EXPECT_EQ(added, 8);
  // A share of 0 adds none.
  EXPECT_EQ(augment(r, {false, 0.0}, 3, 1, 0).labels.size(), 2u);
}

}  // namespace
}  // namespace clef::tune
