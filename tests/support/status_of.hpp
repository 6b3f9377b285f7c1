#pragma once
// Test support: the HTTP status of the clef::Error a step throws (0 when it throws none).

#include <functional>

#include "util/error.hpp"

namespace clef::test {

inline int status_of(const std::function<void()>& step) {
  try {
    step();
  } catch (const Error& e) {
    return e.status();
  }
  return 0;
}

}  // namespace clef::test
