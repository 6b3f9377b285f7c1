#include "request/request.hpp"

namespace clef::request {

const char* type_name(QuestionType type) noexcept {
  switch (type) {
    case QuestionType::noul:
      return "noul";
    case QuestionType::choice:
      return "choice";
    case QuestionType::score:
      return "score";
  }
  return "noul";
}

}  // namespace clef::request
