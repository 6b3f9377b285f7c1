#pragma once
// Test support: SystemOne requests about a support ticket, with two question sets (A: a choice
// and a noul with instructions; B: a score, a noul, and in the full set a choice), for engine
// tests that ask several question sets of one state.

#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/value.hpp"

namespace clef::test {

inline const char* const kTicketQuestionsA = R"({
    "department": {"type": "choice", "instructions": "Which team should handle this ticket?",
      "criteria": {"engineering": "Software and outages", "sales": "Pricing", "support": "Help"}},
    "outage": {"type": "noul", "instructions": "Is a service outage reported?"}})";
inline const char* const kTicketQuestionsB = R"({
    "urgency": {"type": "score", "criteria": ["Not urgent", "Low", "Medium", "High", "Critical"]},
    "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"},
    "tone": {"type": "choice", "criteria": {"calm": "Calm", "angry": "Angry", "lost": "Confused"}}})";

/// {"state": `state`, "questions": `questions`, "images": `images`} (no images key when empty).
inline json::Value ticket_request(const std::string& state, const char* questions,
                                  const std::vector<std::string>& images = {}) {
  std::string text = R"({"state": ")" + state + R"(", "questions": )" + questions;
  if (!images.empty()) {
    text += R"(, "images": [)";
    for (std::size_t i = 0; i < images.size(); ++i) text += (i ? ",\"" : "\"") + images[i] + "\"";
    text += "]";
  }
  return json::parse(text + "}");
}

}  // namespace clef::test
