// API keys: the --api-key-file format, the credentials a request presents, matching and reload.

#include "server/api_keys.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

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
      "# ops team\n\nops sk-ops-1\n  sk-bare  \r\nci \t sk:with:colons\n", "keys.txt");
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0].name, "ops");
  EXPECT_EQ(keys[0].key, "sk-ops-1");
  EXPECT_EQ(keys[1].name, "line-4");  // named after its line
  EXPECT_EQ(keys[1].key, "sk-bare");
  EXPECT_EQ(keys[2].name, "ci");
  EXPECT_EQ(keys[2].key, "sk:with:colons");
}

TEST(ApiKeyFile, MalformedLinesAreRefusedNamingFileAndLine) {
  EXPECT_NE(error_of([] { parse_api_key_file("a k1\nb:c k2\n", "f.txt"); }).find("f.txt: line 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("a k1\na k2\n", "f.txt"); }).find("used twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("a has space\n", "f.txt"); }).find("line 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("a b c\n", "f.txt"); }).find("line 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("# only a comment\n\n", "f.txt"); }).find("no key"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_api_key_file("", "f.txt"); }).find("no key"), std::string::npos);
}

using Values = std::vector<std::string>;

TEST(ApiKeyFile, PresentedKeyReadsBearerOrXApiKey) {
  EXPECT_EQ(presented_key({"Bearer sk-1"}, {}).key, "sk-1");
  EXPECT_EQ(presented_key({"bearer   sk-1 "}, {}).key, "sk-1");     // scheme case-insensitive
  EXPECT_EQ(presented_key({"Bearer sk-1"}, {"sk-1"}).key, "sk-1");  // both, the same key
  EXPECT_EQ(presented_key({}, {" sk-2"}).key, "sk-2");
  EXPECT_EQ(presented_key({"Basic dXNlcjpwYXNz"}, {"sk-3"}).key, "sk-3");  // a gateway's Basic
  EXPECT_EQ(presented_key({"Bearer"}, {}).key, "");
  EXPECT_EQ(presented_key({"Bearer"}, {}).status, 0);  // no key: missing_api_key
  EXPECT_EQ(presented_key({}, {}).status, 0);
}

/// Reported inputs: a Basic (or scheme-less) Authorization alone was answered "missing key";
/// two Authorization headers silently used the first.
TEST(ApiKeyFile, CredentialsThatCannotBeUsedSayWhy) {
  const PresentedKey basic = presented_key({"Basic dXNlcjpwYXNz"}, {});
  EXPECT_EQ(basic.status, 401);
  EXPECT_EQ(presented_key({"sk-no-scheme"}, {}).status, 401);
  EXPECT_NE(basic.problem.find("not of the Bearer scheme"), std::string::npos) << basic.problem;
  const PresentedKey two = presented_key({"Bearer sk-1", "Bearer sk-2"}, {});
  EXPECT_EQ(two.status, 400);
  EXPECT_NE(two.problem.find("more than one Authorization"), std::string::npos);
  EXPECT_EQ(presented_key({}, {"sk-1", "sk-2"}).status, 400);
  const PresentedKey differ = presented_key({"Bearer sk-1"}, {"sk-2"});
  EXPECT_EQ(differ.status, 400);
  EXPECT_TRUE(differ.key.empty());
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
  std::ofstream(file) << "ops sk-old\n";
  ApiKeys keys({"sk-flag"}, file);
  EXPECT_EQ(keys.match("sk-old"), "ops");

  std::ofstream(file) << "ops sk-new\nci sk-ci\n";
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
  std::ofstream(file) << "a sk-same\nb sk-same\n";
  EXPECT_NE(error_of([&] { ApiKeys keys({}, file); }).find("is also 'a'"), std::string::npos);
  std::ofstream(file) << "a sk-flag\n";
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

/// Reported input (issue 52): a key sent without "Bearer " was echoed in the 401's message, which
/// client and proxy error logs keep. Nothing of the header may appear in the problem.
TEST(ApiKeyFile, AKeyWithoutItsSchemeIsNeverEchoed) {
  const std::string secret = "sk-0123456789abcdef0123456789abcdef";
  for (const std::string& auth : {secret, secret + " trailing", "Token " + secret}) {
    const PresentedKey p = presented_key({auth}, {});
    EXPECT_EQ(p.status, 401);
    EXPECT_EQ(p.problem.find("sk-0123"), std::string::npos) << p.problem;
    EXPECT_EQ(p.problem.find("Token"), std::string::npos) << p.problem;
  }
}

/// Reported input (issue 52): the bare key "TopSecretPartA:TopSecretPartB" was split into the
/// name "TopSecretPartA" (logged, a /metrics label) and the key "TopSecretPartB" (accepted
/// alone). A single field with ':' is now refused as ambiguous; a key with ':' takes a name.
TEST(ApiKeyFile, ABareKeyWithAColonIsRefusedNeverSplit) {
  const std::string why =
      error_of([] { parse_api_key_file("TopSecretPartA:TopSecretPartB\n", "f.txt"); });
  EXPECT_NE(why.find("f.txt: line 1"), std::string::npos) << why;
  EXPECT_NE(why.find("ambiguous"), std::string::npos) << why;
  EXPECT_EQ(why.find("TopSecret"), std::string::npos) << why;  // the line is not echoed either
  const auto keys = parse_api_key_file("ops TopSecretPartA:TopSecretPartB\n", "f.txt");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].name, "ops");
  EXPECT_EQ(keys[0].key, "TopSecretPartA:TopSecretPartB");
  ApiKeys accepted({}, "");
  EXPECT_FALSE(accepted.enabled());
}

TEST(ApiKeys, AMissingFileIsRefusedAtStart) {
  EXPECT_NE(error_of([] { ApiKeys keys({}, "/nonexistent/clef-keys"); }).find("cannot be read"),
            std::string::npos);
}

/// Reported inputs: a key file saved with a UTF-8 byte order mark gave a puzzling name error; a
/// bare key's line-N name colliding with an explicit one was not explained.
TEST(ApiKeyFile, AByteOrderMarkIsSkippedAndLineNamesAreExplained) {
  const auto keys = parse_api_key_file("\xEF\xBB\xBFops sk-1\n", "keys.txt");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].name, "ops");
  EXPECT_NE(error_of([] {
              parse_api_key_file("line-2 sk-a\nsk-b\n", "f.txt");
            }).find("a bare key is named line-N"),
            std::string::npos);
}

/// Reported inputs: /dev/zero as a key file ended in bad_alloc, a FIFO blocked the start, and a
/// file of 200,000 keys took minutes (a quadratic duplicate check).
TEST(ApiKeys, DevicesFifosAndHugeFilesAreRefusedAndManyKeysLoadFast) {
  TempDir dir;
  EXPECT_NE(error_of([] { ApiKeys keys({}, "/dev/zero"); }).find("not a regular file"),
            std::string::npos);
  const std::string fifo = (dir.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { ApiKeys keys({}, fifo); }).find("not a regular file"),
            std::string::npos);
  const std::string huge = (dir.path() / "huge").string();
  {
    std::ofstream out(huge);
    const std::string line = "sk-" + std::string(1000, 'x') + "\n";
    for (int i = 0; i < 5000; ++i) out << line;  // 5 MB
  }
  EXPECT_NE(error_of([&] { ApiKeys keys({}, huge); }).find("larger than 4 MiB"), std::string::npos);

  const std::string many = (dir.path() / "many").string();
  {
    std::ofstream out(many);
    for (int i = 0; i < 100000; ++i) out << "k" << i << " sk-" << i << "\n";
  }
  ApiKeys keys({"sk-flag"}, many);  // quadratic, this took about a minute
  EXPECT_EQ(keys.size(), 100001u);
  EXPECT_EQ(keys.match("sk-99999"), "k99999");
  const std::string names = keys.names();
  EXPECT_NE(names.find("and 99981 more"), std::string::npos) << names.substr(0, 300);
  EXPECT_LT(names.size(), 400u);
}

/// Reported input: emptying the key file to revoke its keys was refused on SIGHUP ("holds no
/// key") while --api-key keys remained, so the revoked keys stayed valid.
TEST(ApiKeys, AnEmptiedFileRevokesItsKeysWhenFlagKeysRemain) {
  TempDir dir;
  const std::string file = (dir.path() / "keys").string();
  std::ofstream(file) << "ops sk-ops\n";
  ApiKeys keys({"sk-flag"}, file);
  EXPECT_EQ(keys.match("sk-ops"), "ops");
  std::ofstream(file).close();
  EXPECT_EQ(keys.reload(), "");
  EXPECT_EQ(keys.match("sk-ops"), std::nullopt);
  EXPECT_EQ(keys.match("sk-flag"), "key-1");
  // Without flag keys an empty file would open the server to anyone: still refused.
  std::ofstream(file) << "ops sk-ops\n";
  ApiKeys only_file({}, file);
  std::ofstream(file).close();
  EXPECT_NE(only_file.reload().find("holds no key"), std::string::npos);
  EXPECT_EQ(only_file.match("sk-ops"), "ops");
}

}  // namespace
}  // namespace clef::server
