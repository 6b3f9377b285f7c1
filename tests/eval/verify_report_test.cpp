// `clef verify`'s terminal report (issue 45): columns named for what they count ("errors" for
// runs that could not be decided, beside a verdict about parity), "-" where nothing was measured,
// a long source name that keeps the columns, and what --limit left out.
#include "eval/verify_report.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace clef::eval {
namespace {

RunParity run(const std::string& id, const std::string& source, RunParity::Status status,
              double max_dp) {
  RunParity r;
  r.id = id;
  r.arm = "text";
  r.source = source;
  r.status = status;
  r.max_dp = max_dp;
  r.mean_dp = max_dp / 2;
  r.note = status == RunParity::Status::compared ? "" : "not decided here";
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(VerifyReport, ColumnsSayWhatTheyCountAndStayAligned) {
  VerifyResult result;
  result.same_vocabulary = true;
  result.runs = {
      run("a", "own_text", RunParity::Status::compared, 0.05),
      run("b", "a_very_long_source_name_of_forty_characters", RunParity::Status::compared, 0.001),
      run("c", "own_image", RunParity::Status::skipped, 0)};
  result.runs_selected = 10;
  result.runs_over_limit = 7;
  const ParityBar bar;
  const ParitySummary summary = summarize(result.runs, bar);
  ASSERT_FALSE(summary.pass) << "0.05 is over the bar";
  const std::string report = format_report(VerifySetup{}, result, summary, bar);
  EXPECT_NE(report.find("runs: 3 of the 10 selected, 7 left out by --limit (not run)"),
            std::string::npos)
      << report;
  std::string header, all, image, long_name;
  for (const std::string& line : lines_of(report)) {
    if (line.find("compared") != std::string::npos && line.find("errors") != std::string::npos) {
      header = line;
    }
    if (line.rfind("all ", 0) == 0) all = line;
    if (line.rfind("source own_image", 0) == 0) image = line;
    if (line.rfind("source a_very_long", 0) == 0) long_name = line;
  }
  ASSERT_FALSE(header.empty()) << report;
  EXPECT_EQ(header.find("fail"), std::string::npos) << "a FAIL verdict beside a 'fail 0' column";
  // Each row's first number starts where the header's "compared" does, the long name's row too.
  const std::size_t column = header.find("compared");
  for (const std::string& row : {all, image, long_name}) {
    ASSERT_GT(row.size(), column) << report;
    EXPECT_EQ(row[column - 1], ' ') << "the name runs into the columns:\n" << header << "\n" << row;
    EXPECT_NE(row[column], ' ') << header << "\n" << row;
  }
  // A source with no compared run measured nothing: "-", not 0.000000.
  EXPECT_NE(image.find(" - "), std::string::npos) << image;
  EXPECT_EQ(image.find("0.000000"), std::string::npos) << image;
  EXPECT_NE(report.find("FAIL"), std::string::npos);
}

/// Issue 44: the report names the head's published config; a head that is not clef-flash's is
/// told that the authors' fixture holds clef-flash's answers.
TEST(VerifyReport, NamesTheHeadAndWhenTheFixtureIsAnotherModels) {
  VerifyResult result;
  result.same_vocabulary = true;
  result.runs = {run("a", "own_text", RunParity::Status::compared, 0.001)};
  const ParityBar bar;
  const ParitySummary summary = summarize(result.runs, bar);
  VerifySetup flash;
  flash.head = "clef-flash's published config (Cloudflare/clef-flash)";
  const std::string a = format_report(flash, result, summary, bar);
  EXPECT_NE(a.find("joint schema head: clef-flash's published config"), std::string::npos) << a;
  EXPECT_EQ(a.find("holds clef-flash's answers"), std::string::npos) << a;
  VerifySetup big;
  big.head = "Clef 27B's published config (Cloudflare/clef)";
  big.clef_flash_head = false;
  const std::string b = format_report(big, result, summary, bar);
  EXPECT_NE(b.find("joint schema head: Clef 27B's published config"), std::string::npos) << b;
  EXPECT_NE(b.find("holds clef-flash's answers"), std::string::npos) << b;
  const json::Value j = report_json(big, result, summary, bar);
  ASSERT_NE(j.find("head"), nullptr);
  EXPECT_EQ(j.find("head")->as_string(), big.head);
}

}  // namespace
}  // namespace clef::eval
