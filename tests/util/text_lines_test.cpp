// JSON Lines as clef batch and clef calibrate read them: numbered as an editor shows them, a byte
// order mark and "\r" dropped, blank lines left out.
#include <gtest/gtest.h>

#include "util/text_lines.hpp"

namespace clef::util {
namespace {

TEST(TextLines, NumberedNonBlankLinesWithoutBomOrCarriageReturns) {
  const auto lines = nonblank_lines("\xEF\xBB\xBF{\"a\": 1}\r\n\n  \t\n{\"b\": 2}\n{\"c\": 3}");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].number, 1);
  EXPECT_EQ(lines[0].text, "{\"a\": 1}");
  EXPECT_EQ(lines[1].number, 4);
  EXPECT_EQ(lines[1].text, "{\"b\": 2}");
  EXPECT_EQ(lines[2].number, 5);
  EXPECT_EQ(lines[2].text, "{\"c\": 3}");
  EXPECT_TRUE(nonblank_lines("").empty());
  EXPECT_TRUE(nonblank_lines("\n\n").empty());
}

}  // namespace
}  // namespace clef::util
