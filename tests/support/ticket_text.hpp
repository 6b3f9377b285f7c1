#pragma once
// Test support: a support-ticket-like state of a given number of words (ten words in a fixed
// order), for tests that need records of a chosen length.

#include <string>

namespace clef::test {

/// `words` words of ticket vocabulary, space-separated (about 1.1 tokens a word).
inline std::string ticket_words(int words) {
  static const char* const vocabulary[] = {"database", "outage",  "customers", "login",   "error",
                                           "region",   "payment", "latency",   "support", "ticket"};
  std::string s;
  for (int i = 0; i < words; ++i) {
    if (i > 0) s += ' ';
    s += vocabulary[(i * 7 + 3) % 10];
  }
  return s;
}

}  // namespace clef::test
