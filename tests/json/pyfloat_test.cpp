// float_repr / py_round / decimal_to_double against CPython 3.11 (expected values are CPython's
// repr(x) and repr(round(x, n)) output; tests/data/render_corpus/floats.tsv has 12,000 more).

#include "json/pyfloat.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace clef::json {
namespace {

TEST(JsonPyFloat, ReprNotationBoundaries) {
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(float_repr(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(0.00009999999999999999), "9.999999999999999e-05");
  EXPECT_EQ(float_repr(1e-5), "1e-05");
  EXPECT_EQ(float_repr(0.00001234), "1.234e-05");
  EXPECT_EQ(float_repr(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(float_repr(1e22), "1e+22");
  EXPECT_EQ(float_repr(1e23), "1e+23");
}

TEST(JsonPyFloat, ReprShortestDigits) {
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(float_repr(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(float_repr(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(float_repr(100.0), "100.0");
  EXPECT_EQ(float_repr(0.0), "0.0");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(5e-324), "5e-324");
  EXPECT_EQ(float_repr(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
}

TEST(JsonPyFloat, ReprNonFiniteSpelledAsPython) {
  EXPECT_EQ(float_repr(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(float_repr(-std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(float_repr(INFINITY), "inf");
  EXPECT_EQ(float_repr(-INFINITY), "-inf");
}

TEST(JsonPyFloat, RoundIsCorrectlyRoundedFromTheBinaryValue) {
  EXPECT_EQ(float_repr(py_round(0.00025, 4)), "0.0003");  // the double is above the tie
  EXPECT_EQ(float_repr(py_round(2.675, 2)), "2.67");      // the double is below the tie
  EXPECT_EQ(float_repr(py_round(1.0005, 3)), "1.0");
  EXPECT_EQ(float_repr(py_round(4.35, 1)), "4.3");
  EXPECT_EQ(float_repr(py_round(0.1 + 0.2, 15)), "0.3");
  EXPECT_EQ(float_repr(py_round(0.1 + 0.2, 16)), "0.3");
}

TEST(JsonPyFloat, RoundExactTiesGoToEven) {
  EXPECT_EQ(float_repr(py_round(2.5, 0)), "2.0");
  EXPECT_EQ(float_repr(py_round(0.5, 0)), "0.0");
  EXPECT_EQ(float_repr(py_round(1.5, 0)), "2.0");
  EXPECT_EQ(float_repr(py_round(-2.5, 0)), "-2.0");
  EXPECT_EQ(float_repr(py_round(0.125, 2)), "0.12");
  EXPECT_EQ(float_repr(py_round(0.375, 2)), "0.38");
}

TEST(JsonPyFloat, RoundNegativeDigits) {
  EXPECT_EQ(float_repr(py_round(1250.0, -2)), "1200.0");
  EXPECT_EQ(float_repr(py_round(1350.0, -2)), "1400.0");
  EXPECT_EQ(float_repr(py_round(1249.5, -2)), "1200.0");  // no double rounding via 1250
  EXPECT_EQ(float_repr(py_round(99999.5, -5)), "100000.0");
  EXPECT_EQ(float_repr(py_round(1234567.891, -3)), "1235000.0");
  EXPECT_EQ(float_repr(py_round(-0.4, -1)), "-0.0");
  EXPECT_EQ(float_repr(py_round(1e300, -300)), "1e+300");
  EXPECT_EQ(float_repr(py_round(std::numeric_limits<double>::max(), -300)), "1.79769313e+308");
}

TEST(JsonPyFloat, RoundExtremes) {
  EXPECT_EQ(float_repr(py_round(-0.00001, 4)), "-0.0");
  EXPECT_EQ(float_repr(py_round(5e-324, 323)), "0.0");
  EXPECT_EQ(float_repr(py_round(1e-320, 322)), "1e-320");
  EXPECT_EQ(float_repr(py_round(123.456, 400)), "123.456");
  EXPECT_EQ(float_repr(py_round(123.456, -400)), "0.0");
  EXPECT_EQ(float_repr(py_round(-123.456, -400)), "-0.0");
  EXPECT_EQ(py_round(INFINITY, 2), INFINITY);
  EXPECT_TRUE(std::isnan(py_round(NAN, 2)));
}

TEST(JsonPyFloat, DecimalToDoubleOverflowAndUnderflow) {
  EXPECT_EQ(decimal_to_double("1e400"), INFINITY);
  EXPECT_EQ(decimal_to_double("-1e400"), -INFINITY);
  EXPECT_EQ(decimal_to_double("1.7976931348623158e308"), std::numeric_limits<double>::max());
  EXPECT_EQ(decimal_to_double("1.7976931348623159e308"), INFINITY);
  EXPECT_EQ(decimal_to_double("1e-400"), 0.0);
  EXPECT_TRUE(std::signbit(decimal_to_double("-1e-400")));
  EXPECT_EQ(decimal_to_double("0.000000000000000000000000000001e-300"), 0.0);
  EXPECT_EQ(decimal_to_double("100000000000000000000e-330"), 1e-310);
  EXPECT_EQ(decimal_to_double("-0"), 0.0);
  EXPECT_TRUE(std::signbit(decimal_to_double("-0")));
}

}  // namespace
}  // namespace clef::json
