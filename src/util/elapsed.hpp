#pragma once
// Wall-time intervals in milliseconds on the steady clock, for timings and logs.

#include <chrono>

namespace clef::util {

/// Milliseconds from `a` to `b` (negative when b is before a).
inline double ms_between(std::chrono::steady_clock::time_point a,
                         std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Milliseconds from `t0` to now.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return ms_between(t0, std::chrono::steady_clock::now());
}

}  // namespace clef::util
