#pragma once
// A record's questions as the joint schema head reads them: spans into the hidden-state rows and
// the question type (no ggml here: the runtime's interface passes them on).

#include <cstdint>
#include <vector>

namespace clef::head {

/// A half-open token range [start, end) into the record's ids / hidden-state rows.
struct Span {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

/// One question of the record as the head sees it.
struct HeadQuestion {
  int type = 0;               ///< noul 0, choice 1, score 2 (row of type_embedding)
  Span question;              ///< the rendered instructions' tokens
  std::vector<Span> options;  ///< the rendered option objects' tokens, in model option order
};

}  // namespace clef::head
