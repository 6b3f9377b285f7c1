#pragma once
// Test support for the head: a record of random hidden states and lexical vectors, whose three
// questions' option spans cover up to 40% of it (3 questions), so that every tensor of the head's
// graph (the normalized states, the gathered span rows, the span selection) grows with its length.

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "head/head_config.hpp"
#include "head/joint_schema_head.hpp"

namespace clef::head::testing {

struct RandomRecord {
  std::int64_t n_tokens = 0;
  std::vector<float> hidden;  ///< [n_tokens, H]
  std::vector<HeadQuestion> questions;
  std::vector<float> lexical;  ///< [10 options, H]
};

/// `n_tokens` rows of N(0, 1) hidden states; `n_questions` questions in turn a noul (2 options),
/// a choice (3) and a score (5), each asked over 2 tokens, with options of n_tokens / 24 tokens
/// each (n_tokens must hold them: at least 12 per question).
inline RandomRecord random_record(const HeadConfig& c, std::int64_t n_tokens, std::uint32_t seed,
                                  int n_questions = 3) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  RandomRecord r;
  r.n_tokens = n_tokens;
  r.hidden.resize(static_cast<std::size_t>(n_tokens * c.hidden_size));
  for (float& v : r.hidden) v = normal(rng);
  const std::int64_t option_tokens = std::max<std::int64_t>(1, n_tokens / 24);
  std::int64_t at = 0;
  const auto next = [&at](std::int64_t length) {
    const Span s{at, at + length};
    at += length;
    return s;
  };
  int n_options = 0;
  for (int k = 0; k < n_questions; ++k) {
    const int type = k % 3;
    HeadQuestion q;
    q.type = type;
    q.question = next(2);
    for (int o = 0; o < (type == 0 ? 2 : type == 1 ? 3 : 5); ++o) {
      q.options.push_back(next(option_tokens));
      ++n_options;
    }
    r.questions.push_back(q);
  }
  r.lexical.resize(static_cast<std::size_t>(n_options * c.hidden_size));
  for (float& v : r.lexical) v = normal(rng);
  return r;
}

}  // namespace clef::head::testing
