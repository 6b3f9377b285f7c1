#pragma once
// CPython float semantics clef must reproduce byte for byte (decision contract, section 2):
// repr(float), float(str) for a JSON number, and round(float, ndigits).

#include <string>
#include <string_view>

namespace clef::json {

/// CPython repr(float) (float_repr_style 'short'): the shortest digits that round-trip; fixed
/// notation when the decimal exponent e of d.ddd×10^e is in [-4, 16), else "1e-05", "1e+16",
/// "1.5e+300" (sign and at least two exponent digits); ".0" on integral fixed values ("100.0",
/// "-0.0"). Non-finite values spell as Python does: "nan", "inf", "-inf" (json.dumps spells
/// them differently; that is render()'s business).
std::string float_repr(double x);

/// CPython float(s) for `s` matching the JSON number grammar
/// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (unchecked precondition; any digit count):
/// correctly rounded to nearest-even; overflow gives ±inf ("1e400"), underflow ±0.0.
/// Locale-independent.
double decimal_to_double(std::string_view s);

/// CPython round(x, ndigits) for a float (Objects/floatobject.c double_round): the exact binary
/// value of x correctly rounded to a multiple of 10^-ndigits, ties to even, then converted back
/// (round(0.00025, 4) == 0.0003 because the double 0.00025 lies above the tie; round(2.5, 0) ==
/// 2.0; round(1250.0, -2) == 1200.0). Non-finite x and ndigits > 323 give x; ndigits < -308 gives
/// ±0.0. Where CPython raises OverflowError (a rounded value beyond DBL_MAX) this returns ±inf.
double py_round(double x, int ndigits);

}  // namespace clef::json
