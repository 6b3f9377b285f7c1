// API keys: the --api-key-file format, the credentials a request presents, matching and reload.

#include "server/api_keys.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.hpp"
#include "util/error.hpp"

namespace clef::server {
namespace {

using testing::TempDir;

/// The message of the clef::Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "api-key-file");
    return e.what();
  }
  return "";
}

TEST(ApiKeyFile, NamedAndBareKeysCommentsAndBlankLines) {
  const auto keys = parse_api_key_file(
      "# ops team\n\nops:sk-ops-1\n  sk-bare  \r\nci : sk:with:colons\n", "keys.txt");
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0].name, "ops");
  EXPECT_EQ(keys[0].key, "sk-ops-1");
  EXPECT_EQ(keys[1].name, "line-4");  // named after its line
  EXPECT_EQ(keys[1].key, "sk-bare");
  EXPECT_EQ(keys[2].name, "ci");
  EXPECT_EQ(keys[2].key, "sk:with:colons");
}

TEST(ApiKeyFile, MalformedLinesAreRefusedNamingFileAndLine) {
  EXPECT_NE(error_of([] { parse_api_key_file("a:k1\nb c:k2\n", "f.txt"); }).find("f.txt: line 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("a:k1\na:k2\n", "f.txt"); }).find("used twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("a:has space\n", "f.txt"); }).find("line 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("a:\n", "f.txt"); }).find("line 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("# only a comment\n\n", "f.txt"); }).find("no key"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("", "f.txt"); }).find("no key"), std::string::npos);
}

TEST(ApiKeyFile, PresentedKeyReadsBearerThenXApiKey) {
  EXPECT_EQ(presented_key("Bearer sk-1", ""), "sk-1");
  EXPECT_EQ(presented_key("bearer   sk-1 ", "other"), "sk-1");  // scheme case-insensitive
  EXPECT_EQ(presented_key("", " sk-2"), "sk-2");
  EXPECT_EQ(presented_key("Basic dXNlcjpwYXNz", "sk-3"), "sk-3");  // not a bearer token
  EXPECT_EQ(presented_key("Basic dXNlcjpwYXNz", ""), "");
  EXPECT_EQ(presented_key("Bearer", ""), "");
}

TEST(ApiKeys, MatchNamesTheKeyAndRefusesOthers) {
  ApiKeys keys({"sk-a", "sk-b"}, "");
  EXPECT_TRUE(keys.enabled());
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys.match("sk-a"), "key-1");
  EXPECT_EQ(keys.match("sk-b"), "key-2");
  EXPECT_EQ(keys.match("sk-c"), std::nullopt);
  EXPECT_EQ(keys.match("sk-a "), std::nullopt);
  EXPECT_EQ(keys.match(""), std::nullopt);
  EXPECT_FALSE(ApiKeys({}, "").enabled());
}

TEST(ApiKeys, AFlagKeyWithASpaceIsRefused) {
  try {
    ApiKeys keys({"has space"}, "");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "api-key");
  }
}

TEST(ApiKeys, ReloadReplacesTheFileKeysAndKeepsThemOnAnError) {
  TempDir dir;
  const std::string file = (dir.path() / "keys").string();
  std::ofstream(file) << "ops:sk-old\n";
  ApiKeys keys({"sk-flag"}, file);
  EXPECT_EQ(keys.match("sk-old"), "ops");

  std::ofstream(file) << "ops:sk-new\nci:sk-ci\n";
  EXPECT_EQ(keys.reload(), "");
  EXPECT_EQ(keys.match("sk-old"), std::nullopt);
  EXPECT_EQ(keys.match("sk-new"), "ops");
  EXPECT_EQ(keys.match("sk-ci"), "ci");
  EXPECT_EQ(keys.match("sk-flag"), "key-1");  // the flags' keys stay

  std::ofstream(file) << "broken line with spaces\n";
  EXPECT_NE(keys.reload().find("line 1"), std::string::npos);
  EXPECT_EQ(keys.match("sk-new"), "ops");  // the old set stays

  std::filesystem::remove(file);
  EXPECT_NE(keys.reload().find("cannot be read"), std::string::npos);
  EXPECT_EQ(keys.match("sk-ci"), "ci");
}

TEST(ApiKeys, EmptyFilesDirectoriesAndOneKeyUnderTwoNamesAreRefused) {
  // Reported: an empty file said "cannot be read", and one key under two names was accepted.
  TempDir dir;
  const std::string file = (dir.path() / "keys").string();
  std::ofstream(file).close();
  EXPECT_NE(error_of([&] { ApiKeys keys({}, file); }).find("holds no key"), std::string::npos);
  EXPECT_NE(error_of([&] { ApiKeys keys({}, dir.path().string()); }).find("a directory"),
            std::string::npos);
  std::ofstream(file) << "a:sk-same\nb:sk-same\n";
  EXPECT_NE(error_of([&] { ApiKeys keys({}, file); }).find("is also 'a'"), std::string::npos);
  std::ofstream(file) << "a:sk-flag\n";
  EXPECT_NE(error_of([&] { ApiKeys keys({"sk-flag"}, file); }).find("is also 'key-1'"),
            std::string::npos);
  try {
    ApiKeys keys({"sk-1", "sk-1"}, "");
    FAIL() << "one key given twice was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "api-key");
  }
  ApiKeys named({"sk-1"}, "");
  EXPECT_EQ(named.names(), "key-1");
}

TEST(ApiKeys, AMissingFileIsRefusedAtStart) {
  EXPECT_NE(error_of([] { ApiKeys keys({}, "/nonexistent/clef-keys"); }).find("cannot be read"),
            std::string::npos);
}

}  // namespace
}  // namespace clef::server
