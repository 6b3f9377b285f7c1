#pragma once
// What the joint schema head needs from a record beyond the hidden states: spans and types per
// question, and the lexical prior row of every option (contract section 5, steps 3 and 9).

#include <vector>

#include "head/head_question.hpp"
#include "lexical/lexical_table.hpp"
#include "record/record.hpp"

namespace clef::runtime {

/// The head's per-record inputs.
struct HeadInputs {
  std::vector<head::HeadQuestion> questions;  ///< record order, options in model order
  std::vector<float> lexical;                 ///< [N_options, n_embd], options in record order
};

/// Builds the head inputs of `rec`: l_o = mean of output.weight rows over ids[span_o].
/// Throws clef::Error if a span is empty or a token id is outside the LM head.
HeadInputs make_head_inputs(const record::Record& rec, const lexical::LexicalTable& lexical);

/// What the joint schema head read for one decision (PreparedRequest::keep_head_rows): the
/// backbone's final-norm hidden states and the head's inputs, exactly as the serving path gave
/// them to the head (what `clef tune` trains on).
struct HeadRows {
  int n_tokens = 0;
  std::vector<float> hidden;  ///< [n_tokens, n_embd] row-major
  HeadInputs inputs;          ///< spans, types and lexical prior rows
};

}  // namespace clef::runtime
