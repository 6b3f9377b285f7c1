// clef::json::parse: every rule of the decision contract (section 2) and of CPython's strict
// json.loads that clef follows or deliberately refuses.

#include "json/parse.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "json/render.hpp"
#include "util/error.hpp"

namespace clef::json {
namespace {

/// Parses `text` expecting a 400 invalid_json error; returns its message.
std::string refusal(std::string_view text, const ParseLimits& limits = {}) {
  try {
    parse(text, limits);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 400) << text;
    EXPECT_EQ(e.kind(), ErrorKind::invalid_request) << text;
    EXPECT_EQ(e.code(), "invalid_json") << text;
    EXPECT_NE(std::string(e.what()).find("at byte "), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

TEST(JsonParse, ScalarsAndSurroundingWhitespace) {
  EXPECT_TRUE(parse("null").is_null());
  EXPECT_TRUE(parse(" \t\r\ntrue\n").as_bool());
  EXPECT_FALSE(parse("false").as_bool());
  EXPECT_EQ(parse(" \"a\" ").as_string(), "a");
  EXPECT_EQ(parse("42").integer_digits(), "42");
  EXPECT_EQ(parse("1.5").as_double(), 1.5);
}

TEST(JsonParse, DuplicateKeyKeepsFirstPositionAndLastValue) {
  const Value v = parse(R"({"b":1,"a":2,"b":3,"c":4,"a":5,"b":6})");
  ASSERT_EQ(v.members().size(), 3u);
  EXPECT_EQ(v.members()[0].first, "b");
  EXPECT_EQ(v.members()[0].second.integer_digits(), "6");
  EXPECT_EQ(v.members()[1].first, "a");
  EXPECT_EQ(v.members()[1].second.integer_digits(), "5");
  EXPECT_EQ(v.members()[2].first, "c");
  EXPECT_EQ(dumps_unsorted(v), R"({"b":6,"a":5,"c":4})");
}

TEST(JsonParse, DuplicateKeysInLargeObjectsAreLinearithmic) {
  std::string text = "{";
  for (int i = 0; i < 200000; ++i)
    text += "\"k" + std::to_string(i % 1000) + "\":" + std::to_string(i) + ",";
  text.back() = '}';
  const Value v = parse(text);
  ASSERT_EQ(v.members().size(), 1000u);
  EXPECT_EQ(v.members()[7].first, "k7");
  EXPECT_EQ(v.members()[7].second.integer_digits(), "199007");
}

TEST(JsonParse, KeyOrderIsKept) {
  const Value v = parse(R"({"z":1,"a":{"y":2,"b":3}})");
  EXPECT_EQ(dumps_unsorted(v), R"({"z":1,"a":{"y":2,"b":3}})");
}

TEST(JsonParse, IntegersKeepExactDigits) {
  EXPECT_EQ(parse("12345678901234567890123").integer_digits(), "12345678901234567890123");
  EXPECT_EQ(parse("-98765432109876543210987654321").integer_digits(),
            "-98765432109876543210987654321");
  EXPECT_EQ(parse("-0").integer_digits(), "0");
  EXPECT_EQ(parse("0").integer_digits(), "0");
  const std::string max_digits(4300, '9');
  EXPECT_EQ(parse(max_digits).integer_digits(), max_digits);
  EXPECT_EQ(parse("-" + max_digits).integer_digits(), "-" + max_digits);
  // CPython 3.11 refuses to convert integers with more than 4300 digits.
  EXPECT_NE(refusal(max_digits + "9").find("4301 digits"), std::string::npos);
}

TEST(JsonParse, FractionOrExponentMakesADouble) {
  EXPECT_TRUE(parse("1.0").is_float());
  EXPECT_TRUE(parse("1e0").is_float());
  EXPECT_TRUE(parse("1E+2").is_float());
  EXPECT_EQ(parse("1E+2").as_double(), 100.0);
  const double neg_zero = parse("-0.0").as_double();
  EXPECT_EQ(neg_zero, 0.0);
  EXPECT_TRUE(std::signbit(neg_zero));
  EXPECT_TRUE(std::signbit(parse("-0e5").as_double()));
  EXPECT_EQ(parse("1e400").as_double(), INFINITY);
  EXPECT_EQ(parse("-1e400").as_double(), -INFINITY);
  EXPECT_EQ(parse("1" + std::string(400, '0') + ".0").as_double(), INFINITY);
  EXPECT_EQ(parse("1e-400").as_double(), 0.0);
  EXPECT_TRUE(std::signbit(parse("-1e-400").as_double()));
  EXPECT_EQ(parse("0." + std::string(400, '0') + "1e400").as_double(), 0.1);
  EXPECT_EQ(parse("1e99999999999999999999").as_double(), INFINITY);
  EXPECT_EQ(parse("5e-324").as_double(), 4.9406564584124654e-324);  // smallest subnormal
  EXPECT_EQ(parse("2.4703282292062328e-324").as_double(), 4.9406564584124654e-324);
  EXPECT_EQ(parse("2.4703282292062327e-324").as_double(), 0.0);  // just below half: rounds down
  // Correct rounding of a halfway case with many digits (2^53 + 1: ties to even).
  EXPECT_EQ(parse("9007199254740993.0").as_double(), 9007199254740992.0);
  EXPECT_EQ(parse("9007199254740993.00000000000000000000001").as_double(), 9007199254740994.0);
}

TEST(JsonParse, NanAndInfinityLiterals) {
  EXPECT_TRUE(std::isnan(parse("NaN").as_double()));
  EXPECT_EQ(parse("Infinity").as_double(), INFINITY);
  EXPECT_EQ(parse("-Infinity").as_double(), -INFINITY);
  for (const char* bad : {"-NaN", "nan", "Inf", "-Inf", "inf", "infinity", "NAN", "Infinit",
                          "+Infinity", "-Infinityx"}) {
    refusal(bad);
  }
}

TEST(JsonParse, NumberGrammarIsStrict) {
  for (const char* bad : {"01", "-01", "00", "1.", ".5", "-", "+1", "1e", "1e+", "1E-", "0x10",
                          "1_000", "--1", "- 1", "1.e5", "-.5"}) {
    refusal(bad);
  }
}

TEST(JsonParse, StringEscapes) {
  EXPECT_EQ(parse(R"("\"\\\/\b\f\n\r\t")").as_string(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(parse(R"("\u00e9\u00E9")").as_string(), "\xC3\xA9\xC3\xA9");
  EXPECT_EQ(parse(R"("\u0000")").as_string(), std::string(1, '\0'));
  EXPECT_EQ(parse(R"("\ud83d\ude00")").as_string(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(parse(R"("\uDBFF\uDFFF")").as_string(), "\xF4\x8F\xBF\xBF");
  EXPECT_EQ(parse("\"\x7f\xE2\x80\xA8\"").as_string(), "\x7f\xE2\x80\xA8");  // DEL, U+2028 raw
  for (const char* bad : {R"("\x41")", R"("\a")", R"("\u12")", R"("\u12G4")", R"("\)", "\"abc",
                          R"("\U0041")", "'a'"}) {
    refusal(bad);
  }
}

TEST(JsonParse, LoneSurrogateEscapesAreRefused) {
  for (const char* bad :
       {R"("\ud800")", R"("\udc00")", R"("\udfff")", R"("\ud800\u0041")", R"("\ud800\ud800")",
        R"("\udc00\ud800")", R"("a\ud800)", R"({"\ud800":1})"}) {
    EXPECT_NE(refusal(bad).find("surrogate"), std::string::npos) << bad;
  }
}

TEST(JsonParse, RawControlCharactersInStringsAreRefused) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string text = std::string("\"a") + static_cast<char>(c) + "\"";
    EXPECT_NE(refusal(text).find("byte 2"), std::string::npos) << c;
  }
  EXPECT_EQ(parse("\"\x7f\"").as_string(), "\x7f");  // DEL is not a control character here
}

TEST(JsonParse, InvalidUtf8IsRefusedWithItsOffset) {
  EXPECT_NE(refusal("\"ab\xff\"").find("byte 3: invalid UTF-8"), std::string::npos);
  refusal("\"\xC0\xAF\"");          // overlong
  refusal("\"\xED\xA0\x80\"");      // encoded surrogate
  refusal("\"\xF4\x90\x80\x80\"");  // above U+10FFFF
  refusal("\"\xE2\x82\"");          // truncated
  refusal("[1] \xff");              // even after the value
  refusal("\xEF\xBB\xBF{}");        // a byte order mark (CPython's json.loads(str) refuses it)
}

TEST(JsonParse, TrailingGarbageIsRefusedWhitespaceIsNot) {
  EXPECT_NE(refusal("[1]x").find("byte 3"), std::string::npos);
  refusal("1 2");
  refusal("{} {}");
  refusal("[1]\f");        // form feed is not JSON whitespace
  refusal("\xC2\xA0[1]");  // nor is NO-BREAK SPACE
  refusal("[1]\v");
  refusal("/*c*/1");
  refusal("1//c");
  EXPECT_EQ(parse("\r\n\t [1] \t\r\n").items().size(), 1u);
}

TEST(JsonParse, StructureErrors) {
  for (const char* bad : {"",        " ",           "[",        "]",
                          "{",       "}",           "[1,]",     "[,1]",
                          "{,}",     R"({"a":1,})", R"({"a"})", R"({"a":})",
                          "{'a':1}", R"({"a" 1})",  "{1:2}",    R"(["a" "b"])",
                          "[1 2]",   "nul",         "True",     "None",
                          "tru",     "truex"}) {
    refusal(bad);
  }
  EXPECT_NE(refusal("").find("end of text"), std::string::npos);
}

TEST(JsonParse, DepthLimit) {
  auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  EXPECT_NO_THROW(parse(nested(128)));
  EXPECT_NE(refusal(nested(129)).find("nesting deeper than 128"), std::string::npos);
  std::string objects;
  for (int i = 0; i < 129; ++i) objects += "{\"a\":";
  objects += "1" + std::string(129, '}');
  refusal(objects);
  EXPECT_NO_THROW(parse(nested(3), ParseLimits{.max_depth = 3}));
  refusal(nested(4), ParseLimits{.max_depth = 3});
  refusal("[]", ParseLimits{.max_depth = 0});
  EXPECT_NO_THROW(parse("1", ParseLimits{.max_depth = 0}));
  // The parser does not recurse: deep input within a raised limit parses, and a million open
  // brackets are refused without touching the call stack.
  EXPECT_EQ(dumps(parse(nested(10000), ParseLimits{.max_depth = 10000})), nested(10000));
  refusal(std::string(1 << 20, '['), ParseLimits{.max_depth = 1 << 21});
}

TEST(JsonParse, SizeLimitIs413) {
  const std::string text = "\"" + std::string(100, 'a') + "\"";  // 102 bytes
  EXPECT_NO_THROW(parse(text, ParseLimits{.max_bytes = 102}));
  try {
    parse(text, ParseLimits{.max_bytes = 101});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_EQ(e.kind(), ErrorKind::payload_too_large);
    EXPECT_EQ(e.code(), "request_too_large");
  }
  EXPECT_NO_THROW(parse(std::string(16u << 20, ' ') + "1", ParseLimits{.max_bytes = 17u << 20}));
  EXPECT_THROW(parse(std::string((16u << 20) + 1, ' ')), Error);
}

}  // namespace
}  // namespace clef::json

namespace clef::json {
namespace {

/// Issue 52, item 2: the tree a body parses into is charged as it grows, so a budget stops a
/// parse whose tree would pass it (a body of small numbers grows about 40x).
TEST(JsonParse, TheTreeIsChargedAsItGrowsAndABudgetStopsIt) {
  std::string ints = "[";
  for (int i = 0; i < 200000; ++i) ints += i ? ",1" : "1";
  ints += "]";
  std::size_t charged = 0;
  ParseLimits limits;
  limits.charge = [&](std::ptrdiff_t bytes) { charged += static_cast<std::size_t>(bytes); };
  EXPECT_EQ(parse(ints, limits).items().size(), 200000u);
  // Each value's slot (with room for its vector's growth): 200,000 x 2 x sizeof(Value).
  // and the array itself, and each integer's one digit
  EXPECT_EQ(charged, (200000u + 1) * 2 * sizeof(Value) + 200000u);
  std::size_t big = 0;
  limits.charge = [&](std::ptrdiff_t bytes) { big += static_cast<std::size_t>(bytes); };
  const std::string digits(4300, '7');
  parse("{\"state\":[" + digits + "," + digits + "]}", limits);
  EXPECT_GE(big, 2 * digits.size());  // the digits themselves count
  limits.charge = [](std::ptrdiff_t bytes) {
    if (bytes > 0) throw Error(ErrorKind::payload_too_large, "request_too_large", "over budget");
  };
  try {
    parse(ints, limits);
    FAIL() << "parsed past the budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 413);
  }
}

}  // namespace
}  // namespace clef::json
