#include "server/server_log.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "util/error.hpp"

namespace clef::server {
namespace {

AccessRecord sample() {
  AccessRecord r;
  r.request_id = "req-1";
  r.method = "POST";
  r.path = "/v1/decisions";
  r.status = 200;
  r.input_tokens = 57;
  r.queue_wait_ms = 0.25;
  r.decision_ms = 12.345;
  r.total_ms = 13;
  return r;
}

TEST(ServerLog, TextAccessLineHasEveryField) {
  std::string line = format_access(sample(), LogFormat::text);
  EXPECT_NE(line.find(" access id=req-1 method=POST path=/v1/decisions status=200 input_tokens=57 "
                      "queue_wait_ms=0.25 decision_ms=12.35 total_ms=13.00"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(ServerLog, JsonAccessLineIsOneJsonObject) {
  json::Value v = json::parse(format_access(sample(), LogFormat::json));
  EXPECT_EQ(v.find("event")->as_string(), "access");
  EXPECT_EQ(v.find("id")->as_string(), "req-1");
  EXPECT_EQ(v.find("method")->as_string(), "POST");
  EXPECT_EQ(v.find("path")->as_string(), "/v1/decisions");
  EXPECT_EQ(v.find("status")->integer_digits(), "200");
  EXPECT_EQ(v.find("input_tokens")->integer_digits(), "57");
  EXPECT_DOUBLE_EQ(v.find("queue_wait_ms")->as_double(), 0.25);
  EXPECT_DOUBLE_EQ(v.find("decision_ms")->as_double(), 12.35);
  EXPECT_TRUE(v.find("time")->is_string());
}

TEST(ServerLog, NotApplicableFieldsAreLeftOutAndOddBytesMasked) {
  AccessRecord r;
  r.request_id = "req-2";
  r.method = "GET";
  r.path = "/a b\n\"c\xff";
  r.status = 404;
  std::string text = format_access(r, LogFormat::text);
  EXPECT_EQ(text.find("input_tokens"), std::string::npos);
  EXPECT_EQ(text.find("decision_ms"), std::string::npos);
  EXPECT_NE(text.find("path=/a?b?\"c? "), std::string::npos) << text;
  EXPECT_NO_THROW(json::parse(format_access(r, LogFormat::json)));
}

/// X-Clef-Ignored-Fields and the log's ignored=: a bounded value (a 17 KB key made a header no
/// client could read), odd bytes and '+' encoded, and a last "...+N" no path can be.
TEST(FieldList, IsBoundedEncodedAndCountsWhatItLeavesOut) {
  EXPECT_EQ(field_list({"temperature", "questions.q.instruction"}),
            "temperature,questions.q.instruction");
  EXPECT_EQ(field_list({"a b", "c,d", "50%", "x+y", "\x1b[2J"}), "a%20b,c%2Cd,50%25,x%2By,%1B[2J");
  EXPECT_EQ(field_list({"...+5"}), "...%2B5") << "a real field is never the marker";
  EXPECT_EQ(field_list({std::string(17000, 'k'), "temperature"}), "temperature,...+1");
  EXPECT_EQ(field_list({""}), "...+1") << "an empty key has no name to write";
  std::vector<std::string> many;
  for (int i = 0; i < 400; ++i) many.push_back("extra_field_" + std::to_string(i));
  const std::string list = field_list(many);
  EXPECT_LE(list.size(), kFieldListBytes);
  const std::size_t marker = list.rfind(",...+");
  ASSERT_NE(marker, std::string::npos) << list;
  const auto listed = std::count(list.begin(), list.begin() + static_cast<long>(marker), ',') + 1;
  EXPECT_EQ(listed + std::stoi(list.substr(marker + 5)), 400);
}

/// A stream buffer that keeps each block of characters written to it apart (std::cerr's buffer
/// passes each block to stderr as one write).
class BlockRecorder : public std::streambuf {
 public:
  std::vector<std::string> blocks;

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    blocks.emplace_back(s, static_cast<std::size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) blocks.emplace_back(1, traits_type::to_char_type(c));
    return c;
  }
};

TEST(ServerLog, EachLineIsOneWriteWithItsNewline) {
  // Regression: a line and its newline were two writes, so another writer of stderr (llama.cpp's
  // warnings, ggml's messages) could land between them: the full suite once read a JSON log line
  // with text after its object ("extra data after the JSON value" in
  // ServeBinary.AliasRefuseTruncationAndValidationErrors).
  BlockRecorder blocks;
  std::ostream out(&blocks);
  ServerLog log(out, LogFormat::json);
  log.access(sample());
  log.event("info", "loaded", "req-2");
  ASSERT_EQ(blocks.blocks.size(), 2u);
  for (const std::string& b : blocks.blocks) {
    ASSERT_FALSE(b.empty());
    EXPECT_EQ(b.back(), '\n') << b;
    EXPECT_EQ(std::count(b.begin(), b.end(), '\n'), 1) << b;
    EXPECT_NO_THROW(json::parse(b.substr(0, b.size() - 1))) << b;
  }
}

TEST(ServerLog, EventsAndWholeLines) {
  std::ostringstream out;
  ServerLog log(out, LogFormat::json);
  log.event("error", "internal fault: x\ny", "req-9");
  log.access(sample());
  std::string all = out.str();
  std::size_t nl = all.find('\n');
  ASSERT_NE(nl, std::string::npos);
  json::Value first = json::parse(all.substr(0, nl));
  EXPECT_EQ(first.find("event")->as_string(), "error");
  EXPECT_EQ(first.find("id")->as_string(), "req-9");
  EXPECT_EQ(first.find("message")->as_string(), "internal fault: x y");
  EXPECT_NO_THROW(json::parse(all.substr(nl + 1, all.size() - nl - 2)));
  EXPECT_EQ(all.back(), '\n');
}

TEST(ServerConfig, LogFormatAndValidation) {
  EXPECT_EQ(parse_log_format("text"), LogFormat::text);
  EXPECT_EQ(parse_log_format("json"), LogFormat::json);
  EXPECT_THROW(parse_log_format("xml"), Error);
  ServerConfig c;
  EXPECT_NO_THROW(validate(c));
  c.queue_size = 0;
  try {
    validate(c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "queue-size");
  }
  c = ServerConfig{};
  c.overload_status = 500;
  EXPECT_THROW(validate(c), Error);
  c = ServerConfig{};
  c.port = 70000;
  EXPECT_THROW(validate(c), Error);
}

}  // namespace
}  // namespace clef::server
