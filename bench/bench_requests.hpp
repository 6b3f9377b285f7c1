#pragma once
// The requests clef's benchmarks decide: the model card's ticket questions over a state of a given
// number of words (clef_bench, clef_gpu_bench).

#include <string>

namespace clef::bench {

inline const char* const kCardQuestions = R"({
    "department": {"type": "choice", "instructions": "Which team should handle this ticket?",
      "criteria": {"engineering": "Software, infrastructure and outages",
                   "sales": "Pricing, quotes and purchases", "support": "Account and usage help"}},
    "urgency": {"type": "score", "instructions": "How urgent is this ticket?",
      "criteria": ["Not urgent", "Low", "Medium", "High", "Critical"]},
    "outage": {"type": "noul", "instructions": "Is a service outage reported?"}})";

/// Another 3-question schema: what a second question set asked of the same state looks like.
inline const char* const kFollowUpQuestions = R"({
    "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"},
    "sentiment": {"type": "choice", "instructions": "How does the customer feel?",
      "criteria": {"calm": "Calm and patient", "annoyed": "Annoyed", "angry": "Angry"}},
    "impact": {"type": "score", "instructions": "How many customers are affected?",
      "criteria": ["One", "A few", "Many", "All"]}})";

/// A SystemOne request whose state is `words` words long, with `questions` (default: the card
/// example's).
/// `variant` > 0 numbers the state and picks another order of the same words (a different state
/// of about the same tokens).
inline std::string request_with_state(int words, const char* questions = kCardQuestions,
                                      int variant = 0) {
  std::string state = variant == 0 ? "" : "ticket " + std::to_string(variant) + ": ";
  const char* vocabulary[] = {"database", "outage",  "customers", "login",  "error",  "region",
                              "payment",  "latency", "support",   "ticket", "deploy", "rollback"};
  for (int i = 0; i < words; ++i) {
    state += vocabulary[(i * 7 + 3 + variant * (i % 5)) % 12];
    state += ' ';
  }
  std::string out = R"({"state": ")";
  out.append(state);
  out.append(R"(", "questions": )");
  out.append(questions);
  out.append("}");
  return out;
}

}  // namespace clef::bench
