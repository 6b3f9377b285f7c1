// JSON Lines as clef batch and clef calibrate read them: numbered as an editor shows them, a byte
// order mark and "\r" dropped, blank lines left out.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "util/error.hpp"
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

/// Reported inputs: `clef batch ... /dev/zero` grew to gigabytes and never ended, a 300 MB line
/// took 540 MB before its refusal: a line longer than the limit is refused when it is read.
TEST(ReadLinesFile, RefusesALineLongerThanTheLimitAsSoonAsItIsRead) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("clef-lines-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(path) << "{\"a\": 1}\n" << std::string(200, 'x') << "\n{\"b\": 2}\n";
  EXPECT_EQ(read_lines_file(path, 1000, "in"),
            "{\"a\": 1}\n" + std::string(200, 'x') + "\n{\"b\": 2}\n");
  try {
    read_lines_file(path, 100, "in");
    ADD_FAILURE() << "a 200-byte line read with a 100-byte limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "in");
    EXPECT_NE(std::string(e.what()).find("line 2 is longer than"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_lines_file("/dev/zero", std::size_t{1} << 20, "in"), Error);
  EXPECT_THROW(read_lines_file("/nonexistent/file.jsonl", 100, "data"), Error);
}

}  // namespace
}  // namespace clef::util
