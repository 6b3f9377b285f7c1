// Parsing and rendering scale linearly with the body (16 MiB against 1 MiB measured side by side,
// best of three runs each, so a busy machine slows both alike). The bounds apply to optimized
// builds (NDEBUG); other builds only print the times. How fast a 16 MiB body parses is measured
// by clef_bench's json_parse benchmark (docs/performance.md), not here.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>

#include "json/parse.hpp"
#include "json/render.hpp"

namespace clef::json {
namespace {

template <typename F>
double best_seconds(F&& f) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

/// A 16 MiB request-like body: objects with strings (escapes, non-ASCII), numbers, arrays.
std::string big_body(std::size_t target) {
  std::string text = "[";
  for (int i = 0; text.size() + 200 < target; ++i) {
    if (i) text += ',';
    text += R"({"id":)" + std::to_string(i) +
            R"(,"text":"caf\u00e9 \"quoted\" line\nnext \ud83d\ude00 )" + "\xE2\x82\xAC" +
            R"(","score":)" + std::to_string(i * 0.001) +
            R"(,"tags":["a","b",null,true,1e-7],"nested":{"z":[1,2,3],"a":-0.5}})";
  }
  text += ']';
  return text;
}

TEST(JsonPerf, ParseAndDumpsOf16MiBAreLinear) {
  // Against 1 MiB parsed and dumped side by side: 16x the input, at most ~40x the time (a
  // quadratic step would be ~256x). The absolute time is a benchmark (clef_bench json_parse).
  const std::string small_text = big_body(1u << 20);
  const std::string text = big_body(16u << 20);
  ASSERT_LE(text.size(), 16u << 20);
  Value v;
  const double small_parse_s = best_seconds([&] { v = parse(small_text); });
  const double parse_s = best_seconds([&] { v = parse(text); });
  ASSERT_GT(v.items().size(), 50000u);
  std::string out;
  const double dumps_s = best_seconds([&] { out = dumps(v); });
  EXPECT_EQ(parse(out).items().size(), v.items().size());
  // Numbers only: the most values per byte (8M values). Bound by allocating ~330 MB of values,
  // whose page faults make its time depend on the allocator's state more than on the parser:
  // checked for its result here, timed by clef_bench's json_parse benchmark.
  auto zeros = [](std::size_t bytes) {
    std::string numbers = "[0";
    numbers.reserve(bytes);
    while (numbers.size() + 3 < bytes) numbers += ",0";
    return numbers + ']';
  };
  const std::string small_numbers = zeros(4u << 20);
  const std::string numbers = zeros(16u << 20);
  const double small_numbers_s = best_seconds([&] { v = parse(small_numbers); });
  const double numbers_s = best_seconds([&] { v = parse(numbers); });
  EXPECT_EQ(v.items().size(), (numbers.size() - 1) / 2);
  std::cout << "[perf] parse " << text.size() << " bytes: " << parse_s << " s (1 MiB "
            << small_parse_s << " s); dumps: " << dumps_s << " s; parse " << v.items().size()
            << " zeros: " << numbers_s << " s (4 MiB " << small_numbers_s << " s)\n";
#ifdef NDEBUG
  EXPECT_LT(parse_s, 16 * small_parse_s * 2.5 + 0.05);
#endif
}

TEST(JsonPerf, RenderIsLinear) {
  auto timed = [](std::size_t bytes) {
    const Value v = parse(big_body(bytes));
    return best_seconds([&] { (void)dumps(v); });
  };
  const double small = timed(1u << 20);
  const double large = timed(8u << 20);
  std::cout << "[perf] dumps 1 MiB: " << small << " s, 8 MiB: " << large << " s\n";
#ifdef NDEBUG
  EXPECT_LT(large, 8 * small * 2.5 + 0.05);  // 8x the input, at most ~20x the time
#endif
}

}  // namespace
}  // namespace clef::json
