// libFuzzer target for clef::json::parse (request bodies are untrusted bytes).
//
// Invariants checked on every input:
//   - parse() returns or throws clef::Error with status 400 or 413; nothing else escapes, no
//     crash, no sanitizer report;
//   - what parse() accepts, dumps() and dumps_unsorted() serialize to valid UTF-8 that parse()
//     reads back to the same serialization (a fixed point; NaN compares by its spelling).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "json/parse.hpp"
#include "json/render.hpp"
#include "json/utf8.hpp"
#include "util/error.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    __builtin_printf("invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clef::json;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Value v;
  try {
    v = parse(text);
  } catch (const clef::Error& e) {
    check(e.status() == 400 || e.status() == 413, "parse error status is 400 or 413");
    return 0;
  }
  // Serializations may be longer than the input ("1e400" -> "Infinity"): no size limit here.
  const ParseLimits relaxed{.max_bytes = std::size_t{1} << 40, .max_depth = 128};
  const std::string sorted = dumps(v);
  check(first_invalid_utf8(sorted) == std::string_view::npos, "dumps() is valid UTF-8");
  check(dumps(parse(sorted, relaxed)) == sorted, "parse(dumps(v)) renders the same");
  const std::string unsorted = dumps_unsorted(v);
  check(dumps_unsorted(parse(unsorted, relaxed)) == unsorted,
        "parse(dumps_unsorted(v)) renders the same");
  check(dumps(parse(unsorted, relaxed)) == sorted, "sorting commutes with parsing");
  check(render(v) == (v.is_string() ? v.as_string() : sorted), "render() is string or dumps");
  return 0;
}
