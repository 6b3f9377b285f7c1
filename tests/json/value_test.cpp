// clef::json::Value: construction, checked access, CPython dict semantics of set().

#include "json/value.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace clef::json {
namespace {

TEST(JsonValue, DefaultIsNullAndKindsMatchFactories) {
  EXPECT_TRUE(Value().is_null());
  EXPECT_EQ(Value::boolean(true).kind(), Kind::boolean);
  EXPECT_EQ(Value::integer(std::int64_t{-5}).kind(), Kind::integer);
  EXPECT_EQ(Value::floating(1.5).kind(), Kind::floating);
  EXPECT_EQ(Value::string("x").kind(), Kind::string);
  EXPECT_EQ(Value::array().kind(), Kind::array);
  EXPECT_EQ(Value::object().kind(), Kind::object);
  EXPECT_TRUE(Value::integer("7").is_number());
  EXPECT_TRUE(Value::floating(7).is_number());
  EXPECT_FALSE(Value::string("7").is_number());
}

TEST(JsonValue, IntegerKeepsDigitsAndNormalizesMinusZero) {
  EXPECT_EQ(Value::integer("12345678901234567890123").integer_digits(), "12345678901234567890123");
  EXPECT_EQ(Value::integer("-0").integer_digits(), "0");
  EXPECT_EQ(Value::integer(std::int64_t{-9223372036854775807 - 1}).integer_digits(),
            "-9223372036854775808");
  for (const char* bad : {"", "-", "01", "+1", "1.0", "1e3", "--1", " 1", "-01"}) {
    EXPECT_THROW(Value::integer(std::string(bad)), std::invalid_argument) << bad;
  }
}

TEST(JsonValue, AccessorsThrowOnWrongKind) {
  const Value s = Value::string("x");
  EXPECT_THROW(s.as_bool(), std::logic_error);
  EXPECT_THROW(s.integer_digits(), std::logic_error);
  EXPECT_THROW(s.as_double(), std::logic_error);
  EXPECT_THROW(s.items(), std::logic_error);
  EXPECT_THROW(s.members(), std::logic_error);
  EXPECT_THROW(Value::integer("1").as_string(), std::logic_error);
  EXPECT_THROW(Value::integer("1").as_double(), std::logic_error);  // an int is not a float
}

TEST(JsonValue, SetKeepsFirstPositionWithLastValue) {
  Value o = Value::object();
  o.set("b", Value::integer("1"));
  o.set("a", Value::integer("2"));
  o.set("b", Value::integer("3"));
  ASSERT_EQ(o.members().size(), 2u);
  EXPECT_EQ(o.members()[0].first, "b");
  EXPECT_EQ(o.members()[0].second.integer_digits(), "3");
  EXPECT_EQ(o.members()[1].first, "a");
  ASSERT_NE(o.find("a"), nullptr);
  EXPECT_EQ(o.find("a")->integer_digits(), "2");
  EXPECT_EQ(o.find("c"), nullptr);
  EXPECT_EQ(Value::array().find("a"), nullptr);
  Value arr = Value::array();
  EXPECT_THROW(arr.set("a", Value()), std::logic_error);
}

TEST(JsonValue, TypeNamesAreFixed) {
  EXPECT_STREQ(Value().type_name(), "null");
  EXPECT_STREQ(Value::boolean(false).type_name(), "bool");
  EXPECT_STREQ(Value::integer("1").type_name(), "int");
  EXPECT_STREQ(Value::floating(1).type_name(), "float");
  EXPECT_STREQ(Value::string("").type_name(), "string");
  EXPECT_STREQ(Value::array().type_name(), "array");
  EXPECT_STREQ(Value::object().type_name(), "object");
}

TEST(JsonValue, EqualityIsStructural) {
  EXPECT_EQ(Value::array({Value::integer("1"), Value::string("a")}),
            Value::array({Value::integer("1"), Value::string("a")}));
  EXPECT_NE(Value::integer("1"), Value::floating(1.0));  // int 1 and float 1.0 differ in kind
  EXPECT_NE(Value::string("1"), Value::integer("1"));
  EXPECT_NE(Value::object({{"a", Value()}}), Value::object({{"b", Value()}}));
  EXPECT_LE(sizeof(Value), 48u);  // compact: a 16 MiB body can hold millions of values
}

}  // namespace
}  // namespace clef::json
