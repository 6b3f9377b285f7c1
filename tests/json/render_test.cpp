// clef::json::dumps / dumps_unsorted / render against CPython's json.dumps(ensure_ascii=False,
// separators=(",", ":"), sort_keys=True); the expected strings are CPython's output.

#include "json/render.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "json/parse.hpp"

namespace clef::json {
namespace {

TEST(JsonRender, ScalarsAsCPythonPrintsThem) {
  EXPECT_EQ(dumps(Value()), "null");
  EXPECT_EQ(dumps(Value::boolean(true)), "true");
  EXPECT_EQ(dumps(Value::boolean(false)), "false");
  EXPECT_EQ(dumps(Value::integer("-12345678901234567890123")), "-12345678901234567890123");
  EXPECT_EQ(dumps(Value::floating(100.0)), "100.0");
  EXPECT_EQ(dumps(Value::floating(1e16)), "1e+16");
  EXPECT_EQ(dumps(Value::floating(1e-5)), "1e-05");
  EXPECT_EQ(dumps(Value::floating(0.0001)), "0.0001");
  EXPECT_EQ(dumps(Value::floating(-0.0)), "-0.0");
  EXPECT_EQ(dumps(Value::floating(NAN)), "NaN");
  EXPECT_EQ(dumps(Value::floating(-NAN)), "NaN");
  EXPECT_EQ(dumps(Value::floating(INFINITY)), "Infinity");
  EXPECT_EQ(dumps(Value::floating(-INFINITY)), "-Infinity");
}

TEST(JsonRender, StringEscapesExactlyAsCPython) {
  // json.dumps("\x00\x01\x08\x09\x0a\x0b\x0c\x0d\x1f\x7f \"\\/\u00e9\u2028\U0001F600",
  //            ensure_ascii=False)
  const std::string in = std::string("\x00\x01\x08\x09\x0a\x0b\x0c\x0d\x1f\x7f \"\\/", 14) +
                         "\xC3\xA9\xE2\x80\xA8\xF0\x9F\x98\x80";
  EXPECT_EQ(dumps(Value::string(in)),
            "\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\x7f \\\"\\\\/"
            "\xC3\xA9\xE2\x80\xA8\xF0\x9F\x98\x80\"");
  EXPECT_EQ(dumps(Value::string("\x1a\x1b")), "\"\\u001a\\u001b\"");  // lowercase hex
  EXPECT_EQ(dumps(Value::string("")), "\"\"");
}

TEST(JsonRender, CompactSeparatorsAndNesting) {
  const Value v = Value::array(
      {Value::object({{"b", Value::array()}, {"a", Value::object()}}), Value::string("x")});
  EXPECT_EQ(dumps(v), R"([{"a":{},"b":[]},"x"])");
  EXPECT_EQ(dumps_unsorted(v), R"([{"b":[],"a":{}},"x"])");
}

TEST(JsonRender, KeysSortByCodePointAtEveryDepth) {
  // sorted(["\ue000", "\U0001f600", "\uffff", "", "a", "B", "\x7f", "\u00e9"]) in CPython:
  // '', 'B', 'a', '\x7f', 'é', '\ue000', '\uffff', '😀'. UTF-16 order would put the astral
  // U+1F600 (surrogates D83D DE00) before U+E000 and U+FFFF.
  const Value v =
      parse(R"({"\ue000":1,"\ud83d\ude00":2,"\uffff":3,"":4,"a":5,"B":6,"\u007f":7,"\u00e9":8,)"
            R"("n":{"z":1,"y":[{"d":1,"c":2}]}})");
  EXPECT_EQ(dumps(v),
            "{\"\":4,\"B\":6,\"a\":5,\"n\":{\"y\":[{\"c\":2,\"d\":1}],\"z\":1},\"\x7f\":7,"
            "\"\xC3\xA9\":8,\"\xEE\x80\x80\":1,\"\xEF\xBF\xBF\":3,\"\xF0\x9F\x98\x80\":2}");
  // A key that is a prefix of another sorts first; NUL sorts before everything.
  EXPECT_EQ(dumps(parse(R"({"ab":1,"a":2,"a\u0000":3})")), R"({"a":2,"a\u0000":3,"ab":1})");
}

TEST(JsonRender, OptionObjectFromTheContract) {
  // Contract section 2: render({"option_id": id, "description": desc}).
  const Value option = Value::object(
      {{"option_id", Value::string("yes")}, {"description", Value::string("It is.")}});
  EXPECT_EQ(render(option), R"({"description":"It is.","option_id":"yes"})");
}

TEST(JsonRender, RenderUsesStringsAsIs) {
  EXPECT_EQ(render(Value::string("a \"quoted\"\n text")), "a \"quoted\"\n text");
  EXPECT_EQ(render(Value::string("")), "");
  EXPECT_EQ(render(Value::integer("7")), "7");
  EXPECT_EQ(render(Value::floating(0.5)), "0.5");
  EXPECT_EQ(render(Value()), "null");
  EXPECT_EQ(render(Value::array({Value::string("a")})), R"(["a"])");
}

TEST(JsonRender, ProgrammaticDuplicateKeysKeepInsertionOrderWhenSorted) {
  Value v = Value::object();
  v.members().emplace_back("b", Value::integer("1"));
  v.members().emplace_back("a", Value::integer("2"));
  v.members().emplace_back("b", Value::integer("3"));
  EXPECT_EQ(dumps(v), R"({"a":2,"b":1,"b":3})");
}

TEST(JsonRender, ParseThenDumpsExamples) {
  EXPECT_EQ(dumps(parse(R"({"b":1,"a":2,"b":3})")), R"({"a":2,"b":3})");
  EXPECT_EQ(dumps(parse("[1E5, -0, -0.0, 1e400, 12345678901234567890123, 0.1e1]")),
            "[100000.0,0,-0.0,Infinity,12345678901234567890123,1.0]");
  EXPECT_EQ(dumps(parse(R"("\u00e9\/")")), "\"\xC3\xA9/\"");
}

TEST(JsonRender, LinearInOutputSize) {
  // One long string with every other byte escaped, and a wide array: both render in one pass.
  std::string s;
  for (int i = 0; i < 1000000; ++i) s += (i % 2) ? 'a' : '\n';
  const std::string out = dumps(Value::string(s));
  EXPECT_EQ(out.size(), 2 + 1000000 / 2 * 3);
  std::vector<Value> items(1000000, Value::integer("1"));
  EXPECT_EQ(dumps(Value::array(std::move(items))).size(), 2 * 1000000 + 1);
}

}  // namespace
}  // namespace clef::json
