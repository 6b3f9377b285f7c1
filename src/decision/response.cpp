#include "decision/response.hpp"

#include "decision/answer.hpp"
#include "decision/softmax.hpp"
#include "json/render.hpp"
#include "util/error.hpp"

namespace clef::decision {

using json::Value;

Value build_response(const request::Request& req, const std::vector<std::vector<float>>& logits,
                     std::size_t input_tokens, const AnswerOptions& options) {
  if (logits.size() != req.questions.size()) {
    throw Error(ErrorKind::internal, "internal_error",
                std::to_string(logits.size()) + " logit rows for " +
                    std::to_string(req.questions.size()) + " questions");
  }
  std::vector<Value::Member> answers;
  for (std::size_t k = 0; k < logits.size(); ++k) {
    const std::vector<float> p32 =
        options.calibration != nullptr
            ? softmax_f32(options.calibration->apply(req.questions[k], logits[k]))
            : softmax_f32(logits[k]);
    const std::vector<double> p(p32.begin(), p32.end());
    answers.emplace_back(req.questions[k].id,
                         answer_question(req.questions[k], p, options.confidence));
  }
  Value usage =
      Value::object({{"input_tokens", Value::integer(static_cast<std::int64_t>(input_tokens))},
                     {"output_tokens", Value::integer(std::int64_t{0})}});
  return Value::object({{"model", Value::string(req.model)},
                        {"answers", Value::object(std::move(answers))},
                        {"usage", std::move(usage)}});
}

std::string response_body(const Value& response) {
  return json::dumps_unsorted(response);
}

}  // namespace clef::decision
