// clef::json::first_invalid_utf8 against the well-formed sequences of Unicode table 3-7.

#include "json/utf8.hpp"

#include <gtest/gtest.h>

#include <string>

namespace clef::json {
namespace {

constexpr auto npos = std::string_view::npos;

TEST(JsonUtf8, AcceptsWellFormedSequences) {
  EXPECT_EQ(first_invalid_utf8(""), npos);
  EXPECT_EQ(first_invalid_utf8("plain ascii, long enough for the 8-byte path"), npos);
  EXPECT_EQ(first_invalid_utf8("\xC2\x80 \xDF\xBF \xE0\xA0\x80 \xED\x9F\xBF \xEE\x80\x80"), npos);
  EXPECT_EQ(first_invalid_utf8("\xEF\xBF\xBF \xF0\x90\x80\x80 \xF4\x8F\xBF\xBF"), npos);
  EXPECT_EQ(first_invalid_utf8(std::string("a\0b", 3)), npos);  // NUL is valid UTF-8
}

TEST(JsonUtf8, ReportsTheOffsetOfTheFirstBadByte) {
  EXPECT_EQ(first_invalid_utf8("abc\x80"), 3u);           // stray continuation
  EXPECT_EQ(first_invalid_utf8("ab\xC0\xAF"), 2u);        // overlong '/'
  EXPECT_EQ(first_invalid_utf8("\xC1\xBF"), 0u);          // overlong
  EXPECT_EQ(first_invalid_utf8("\xE0\x80\xAF"), 0u);      // overlong 3-byte
  EXPECT_EQ(first_invalid_utf8("\xF0\x80\x80\xAF"), 0u);  // overlong 4-byte
  EXPECT_EQ(first_invalid_utf8("x\xED\xA0\x80"), 1u);     // encoded surrogate D800
  EXPECT_EQ(first_invalid_utf8("\xED\xBF\xBF"), 0u);      // encoded surrogate DFFF
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("\xF5\x80\x80\x80"), 0u);  // F5 never valid
  EXPECT_EQ(first_invalid_utf8("\xFF"), 0u);
  EXPECT_EQ(first_invalid_utf8("12345678\xE2\x82"), 8u);  // truncated at the end
  EXPECT_EQ(first_invalid_utf8("\xE2\x82x"), 0u);         // truncated in the middle
  EXPECT_EQ(first_invalid_utf8("0123456789abcdef\xF0\x9F\x98\x80\xC3"), 20u);
}

}  // namespace
}  // namespace clef::json
