// libFuzzer target for clef::json::render/dumps and the CPython float functions, on values
// built directly from the fuzzer's bytes (not only what the parser produces): any double
// including NaN payloads and subnormals, any canonical integer, any Unicode string.
//
// Invariants: dumps() output is valid UTF-8 JSON that parse() reads back to the same bytes;
// render() of a string is the string; float_repr() round-trips exactly; py_round() stays within
// half a unit of the last kept digit (plus the final conversion's half ulp).

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "json/parse.hpp"
#include "json/pyfloat.hpp"
#include "json/render.hpp"
#include "json/utf8.hpp"

namespace {

using clef::json::Value;

void check(bool ok, const char* what) {
  if (!ok) {
    __builtin_printf("invariant violated: %s\n", what);
    std::abort();
  }
}

std::string make_string(FuzzedDataProvider& fdp) {
  std::string s;
  const auto n = fdp.ConsumeIntegralInRange<int>(0, 16);
  for (int i = 0; i < n; ++i) {
    std::uint32_t cp;
    switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        cp = fdp.ConsumeIntegralInRange<std::uint32_t>(0, 0x7F);  // ASCII incl. controls, DEL
        break;
      case 1:
        cp = fdp.ConsumeIntegralInRange<std::uint32_t>(0x80, 0xD7FF);
        break;
      case 2:
        cp = fdp.ConsumeIntegralInRange<std::uint32_t>(0xE000, 0xFFFF);
        break;
      default:
        cp = fdp.ConsumeIntegralInRange<std::uint32_t>(0x10000, 0x10FFFF);
    }
    clef::json::append_utf8(s, cp);
  }
  return s;
}

double make_double(FuzzedDataProvider& fdp) {
  const auto bits = fdp.ConsumeIntegral<std::uint64_t>();
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

Value make_value(FuzzedDataProvider& fdp, int depth) {
  const int kind = fdp.ConsumeIntegralInRange<int>(0, depth > 8 ? 4 : 6);
  switch (kind) {
    case 0:
      return fdp.ConsumeBool() ? Value() : Value::boolean(fdp.ConsumeBool());
    case 1: {
      if (fdp.ConsumeBool()) return Value::integer(fdp.ConsumeIntegral<std::int64_t>());
      std::string digits = fdp.ConsumeBool() ? "-" : "";
      digits.push_back(static_cast<char>('1' + fdp.ConsumeIntegralInRange<int>(0, 8)));
      const auto n = fdp.ConsumeIntegralInRange<int>(0, 60);
      for (int i = 0; i < n; ++i) {
        digits.push_back(static_cast<char>('0' + fdp.ConsumeIntegralInRange<int>(0, 9)));
      }
      return Value::integer(std::move(digits));
    }
    case 2:
    case 3:
      return Value::floating(make_double(fdp));
    case 4:
      return Value::string(make_string(fdp));
    case 5: {
      Value a = Value::array();
      const auto n = fdp.ConsumeIntegralInRange<int>(0, 6);
      for (int i = 0; i < n; ++i) a.items().push_back(make_value(fdp, depth + 1));
      return a;
    }
    default: {
      Value o = Value::object();
      const auto n = fdp.ConsumeIntegralInRange<int>(0, 6);
      for (int i = 0; i < n; ++i) o.set(make_string(fdp), make_value(fdp, depth + 1));
      return o;
    }
  }
}

void check_float(double x, int ndigits) {
  using namespace clef::json;
  const std::string repr = float_repr(x);
  if (std::isfinite(x)) {
    const double back = decimal_to_double(repr);
    check(std::memcmp(&back, &x, sizeof x) == 0, "float_repr round-trips");
    const double r = py_round(x, ndigits);
    if (ndigits >= 0 && ndigits <= 300) {
      check(std::isfinite(r), "py_round of a finite value is finite");
      // The decimal result is within half a unit of x; converting it back to a double adds at
      // most half an ulp.
      const double half_unit = 0.5 * std::pow(10.0, -ndigits);
      const double big = std::fmax(std::fabs(r), std::fabs(x));
      const double ulp = std::nextafter(big, INFINITY) - big;
      check(r == x || std::fabs(r - x) <= half_unit * (1 + 1e-12) + ulp,
            "py_round within half a unit (plus an ulp)");
    }
  } else {
    check(repr == "nan" || repr == "inf" || repr == "-inf", "non-finite repr");
    check(std::isnan(x) ? std::isnan(py_round(x, ndigits)) : py_round(x, ndigits) == x,
          "py_round keeps non-finite values");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clef::json;
  FuzzedDataProvider fdp(data, size);
  const double x = make_double(fdp);
  check_float(x, fdp.ConsumeIntegralInRange<int>(-400, 400));

  const Value v = make_value(fdp, 0);
  const std::string sorted = dumps(v);
  check(first_invalid_utf8(sorted) == std::string_view::npos, "dumps() is valid UTF-8");
  const ParseLimits relaxed{.max_bytes = std::size_t{1} << 40, .max_depth = 64};
  check(dumps(parse(sorted, relaxed)) == sorted, "parse(dumps(v)) renders the same");
  const std::string unsorted = dumps_unsorted(v);
  check(dumps_unsorted(parse(unsorted, relaxed)) == unsorted, "unsorted round trip");
  if (v.is_string()) {
    check(render(v) == v.as_string(), "render() of a string is the string");
  } else {
    check(render(v) == sorted, "render() is dumps()");
  }
  return 0;
}
