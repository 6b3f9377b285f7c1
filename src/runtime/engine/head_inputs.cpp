#include "runtime/engine/head_inputs.hpp"

#include <span>

namespace clef::runtime {

HeadInputs make_head_inputs(const record::Record& rec, const lexical::LexicalTable& lexical) {
  HeadInputs inputs;
  const std::span<const record::TokenId> ids(rec.ids);
  for (const record::QuestionRecord& q : rec.questions) {
    head::HeadQuestion hq;
    hq.type = static_cast<int>(q.type);
    hq.question = {static_cast<std::int64_t>(q.question_span.begin),
                   static_cast<std::int64_t>(q.question_span.end)};
    for (const record::Span& span : q.option_spans) {
      hq.options.push_back(
          {static_cast<std::int64_t>(span.begin), static_cast<std::int64_t>(span.end)});
      const auto row = lexical.mean_row(ids.subspan(span.begin, span.size()));
      inputs.lexical.insert(inputs.lexical.end(), row.begin(), row.end());
    }
    inputs.questions.push_back(std::move(hq));
  }
  return inputs;
}

}  // namespace clef::runtime
