// clef batch's pieces: input lines (bare requests keep their bytes, named ones their id, bad
// lines become errors), the state key (same state and images, same key, whatever the questions),
// records, and what --resume reads back from a killed run's output.
#include <gtest/gtest.h>

#include <atomic>

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "batch/batch_input.hpp"
#include "batch/batch_output.hpp"
#include "batch/batch_runner.hpp"
#include "batch/state_key.hpp"
#include "json/parse.hpp"
#include "support/tiny_model.hpp"
#include "util/error.hpp"

namespace clef::batch {
namespace {

TEST(BatchInput, BareAndNamedRequestsAndBadLines) {
  const auto items = parse_batch_input(
      "{\"state\": 1.50, \"questions\": {\"q\": {\"type\": \"noul\"}}}\n"
      "\n"
      "{\"id\": \"t-7\", \"request\": {\"state\": \"x\", \"questions\": {}}}\r\n"
      "{oops\n"
      "[1, 2]\n"
      "{\"id\": 3, \"request\": 5}");
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0].line, 1);
  EXPECT_EQ(items[0].id, json::Value::integer(std::int64_t{1}));
  EXPECT_EQ(items[0].body, "{\"state\": 1.50, \"questions\": {\"q\": {\"type\": \"noul\"}}}")
      << "a bare request is sent as the client wrote it";
  EXPECT_EQ(items[1].line, 3);
  EXPECT_EQ(items[1].id, json::Value::string("t-7"));
  EXPECT_EQ(items[1].body, "{\"state\":\"x\",\"questions\":{}}");
  EXPECT_FALSE(items[2].request.has_value());
  EXPECT_NE(items[2].error.find("invalid JSON"), std::string::npos);
  EXPECT_NE(items[3].error.find("not a JSON object"), std::string::npos);
  EXPECT_NE(items[4].error.find("\"request\" is not"), std::string::npos);
  EXPECT_EQ(items[4].line, 6);
}

TEST(StateKey, SameStateAndImagesSameKeyWhateverTheQuestions) {
  const auto key = [](const char* text) { return state_key(json::parse(text)); };
  const std::string a = key(R"({"state": {"b": 1, "a": 2}, "questions": {"x": {"type": "noul"}}})");
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a, key(R"({"state": {"a": 2, "b": 1}, "questions": {"y": {"type": "noul"}}})"))
      << "rendered as the contract renders (sorted keys)";
  EXPECT_NE(a, key(R"({"state": {"a": 2, "b": 3}, "questions": {}})"));
  EXPECT_NE(a, key(R"({"state": {"a": 2, "b": 1}, "images": ["data:x"], "questions": {}})"));
  EXPECT_EQ(key(R"({"questions": {}})"), "");
}

TEST(BatchOutput, ResumeReadsCompleteRecordsAndCutsATornOne) {
  test::TempDir dir("clef-batch");
  const auto out = dir.path() / "out.jsonl";
  {
    std::ofstream f(out);
    f << answer_record({json::Value::string("a"), 1, ""}, 200, R"({"answers":{}})");
    f << error_record({json::Value::integer(std::int64_t{2}), 2, ""}, 400, "invalid_request",
                      "bad");
    f << R"({"id":"c","line":3,"sta)";  // killed mid-write
  }
  EXPECT_EQ(answered_lines(out), (std::set<int>{1, 2}));
  EXPECT_GT(cut_torn_line(out), 0u);
  EXPECT_EQ(cut_torn_line(out), 0u);
  EXPECT_EQ(answered_lines(out), (std::set<int>{1, 2}));
  const json::Value r = json::parse(error_record({json::Value::string("x"), 9, ""}, 0,
                                                 "connection_failed", "refused \"quoted\""));
  EXPECT_EQ(r.find("status")->integer_digits(), "0");
  EXPECT_EQ(r.find("error")->find("message")->as_string(), "refused \"quoted\"");
  EXPECT_TRUE(answered_lines(dir.path() / "missing.jsonl").empty());
}

TEST(BatchOutput, ResumeRetriesLinesNoServerDecidedAndKeepsOneRecordPerLine) {
  // A break test: after an outage, --resume never retried lines recorded with status 0 or 503.
  test::TempDir dir("clef-batch-resume");
  const auto out = dir.path() / "out.jsonl";
  {
    std::ofstream f(out);
    f << answer_record({json::Value::integer(std::int64_t{1}), 1, ""}, 200, R"({"answers":{}})");
    f << error_record({json::Value::integer(std::int64_t{2}), 2, ""}, 0, "connection_failed", "x");
    f << error_record({json::Value::integer(std::int64_t{3}), 3, ""}, 503, "queue_full", "x");
    f << error_record({json::Value::integer(std::int64_t{4}), 4, ""}, 400, "invalid_request", "x");
    // Reported: a run without the server's key recorded 401s that --resume then kept.
    f << error_record({json::Value::integer(std::int64_t{5}), 5, ""}, 401, "missing_api_key", "x");
    f << R"({"line": 99999999999999, "status": 200})"
      << "\n";  // not a line of ours
  }
  EXPECT_EQ(answered_lines(out), (std::set<int>{1, 4}));
  EXPECT_EQ(drop_retryable_records(out), 3u);
  EXPECT_EQ(answered_lines(out), (std::set<int>{1, 4}));
  std::ifstream in(out);
  std::string line;
  int records = 0;
  while (std::getline(in, line)) ++records;
  EXPECT_EQ(records, 3) << "the three undecided lines' records are gone, the others stay";
}

/// Issue 53: --resume kept lines of OUT that are no records (another file given as OUT, or an
/// edited one) and appended to it. Refused naming the line; the file is left as it was.
TEST(BatchOutput, ResumeRefusesAnOutputWithLinesThatAreNoRecords) {
  test::TempDir dir("clef-batch-resume-junk");
  const auto out = dir.path() / "out.jsonl";
  std::string text =
      answer_record({json::Value::integer(std::int64_t{1}), 1, ""}, 200, R"({"answers":{}})");
  text += error_record({json::Value::integer(std::int64_t{2}), 2, ""}, 503, "queue_full", "x");
  text += "state,question,answer\n";   // a CSV given as OUT
  text += R"({"id":3,"line":3,"sta)";  // torn
  std::ofstream(out, std::ios::binary) << text;
  try {
    drop_retryable_records(out);
    ADD_FAILURE() << "resumed into a file with a line that is no record";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "out");
    EXPECT_NE(std::string(e.what()).find("out.jsonl line 3 is not a record of clef batch"),
              std::string::npos)
        << e.what();
  }
  std::ifstream in(out, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), text)
      << "nothing changed";
  // A torn last line alone is a killed run's: no refusal.
  std::ofstream(out, std::ios::binary) << R"({"id":1,"line":1,"status":503,"error":{}})"
                                       << "\n"
                                       << R"({"id":3,"li)";
  EXPECT_EQ(drop_retryable_records(out), 1u);
}

/// A breaker's input: --resume matched records by line number alone; with another input, or the
/// input's lines reordered, it skipped lines never decided and decided others twice. A record
/// whose id is not its input line's, or whose line the input lacks, is refused.
TEST(BatchOutput, ResumeRefusesRecordsOfAnotherInput) {
  test::TempDir dir("clef-batch-resume-ids");
  const auto out = dir.path() / "out.jsonl";
  const std::vector<BatchItem> items = parse_batch_input(
      "{\"id\": \"k0\", \"request\": {}}\n{\"id\": \"k1\", \"request\": {}}\n{\"questions\": "
      "{}}\n");
  const auto write = [&](const std::string& text) { std::ofstream(out, std::ios::binary) << text; };
  const auto refusal = [&]() -> std::string {
    try {
      check_resumed_records(out, items);
    } catch (const Error& e) {
      EXPECT_EQ(e.param(), "out");
      return e.what();
    }
    return "";
  };
  // This input's records (line 3's id is its number), and a torn last line: accepted.
  write(answer_record({json::Value::string("k0"), 1, ""}, 200, R"({"answers":{}})") +
        answer_record({json::Value::integer(std::int64_t{3}), 3, ""}, 200, R"({"answers":{}})") +
        R"({"id":"k1","li)");
  EXPECT_EQ(refusal(), "");
  // The input reordered: line 1's record holds k1.
  write(answer_record({json::Value::string("k1"), 1, ""}, 200, R"({"answers":{}})"));
  EXPECT_NE(refusal().find("out.jsonl line 1 is the record of input line 1 with id \"k1\", but "
                           "that line's id is \"k0\""),
            std::string::npos);
  // A record of a line the input does not have.
  write(answer_record({json::Value::string("k0"), 1, ""}, 200, R"({"answers":{}})") +
        error_record({json::Value::integer(std::int64_t{9}), 9, ""}, 400, "invalid_request", "x"));
  EXPECT_NE(refusal().find("out.jsonl line 2 is the record of input line 9, which the input "
                           "does not have"),
            std::string::npos);
}

/// A breaker's input: two inputs of bare requests with the same number of lines give their
/// records the same ids (the line numbers), so --resume took OUT of one for the other, skipped its
/// lines and appended to another input's answers. Records carry their line's SHA-256; one that
/// differs is refused. Records written before they carried it are still taken.
TEST(BatchOutput, ResumeRefusesRecordsOfAnotherInputOfBareRequests) {
  test::TempDir dir("clef-batch-resume-bytes");
  const auto out = dir.path() / "out.jsonl";
  const std::vector<BatchItem> first = parse_batch_input(
      "{\"state\": \"a\", \"questions\": {}}\n{\"state\": \"b\", \"questions\": {}}\n");
  const std::vector<BatchItem> other = parse_batch_input(
      "{\"state\": \"c\", \"questions\": {}}\n{\"state\": \"d\", \"questions\": {}}\n");
  ASSERT_EQ(first[0].id, other[0].id) << "bare requests: the same ids";
  EXPECT_EQ(first[0].line_sha256.size(), 64u);
  EXPECT_NE(first[0].line_sha256, other[0].line_sha256);
  std::ofstream(out, std::ios::binary)
      << answer_record(record_key(first[0]), 200, R"({"answers":{}})")
      << error_record(record_key(first[1]), 400, "invalid_request", "x");
  EXPECT_EQ(
      json::parse(answer_record(record_key(first[0]), 200, "{}")).find("line_sha256")->as_string(),
      first[0].line_sha256);
  EXPECT_NO_THROW(check_resumed_records(out, first));
  try {
    check_resumed_records(out, other);
    ADD_FAILURE() << "resumed another input's OUT";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "out");
    EXPECT_NE(std::string(e.what()).find("out.jsonl line 1 is the record of input line 1, but "
                                         "that line's bytes are not the ones it was decided for"),
              std::string::npos)
        << e.what();
  }
  // A line_sha256 that is not a string is no older run's record: refused too.
  std::ofstream(out, std::ios::binary) << R"({"id":1,"line":1,"line_sha256":12345,"status":200,)"
                                       << R"("response":{"answers":{}}})"
                                       << "\n";
  EXPECT_THROW(check_resumed_records(out, other), Error);
  // A record without line_sha256 (written before records carried it): ids alone, as before.
  std::ofstream(out, std::ios::binary)
      << answer_record({json::Value::integer(std::int64_t{1}), 1, ""}, 200, R"({"answers":{}})");
  EXPECT_NO_THROW(check_resumed_records(out, other));
}

TEST(HttpSender, ABrokenEndpointGivesErrorRecordsNotForgedOnes) {
  // A break test: a 200 body that was not one JSON object went into OUT as is (split records,
  // forged lines). It is an error record now; a bad endpoint URL is refused up front.
  httplib::Server server;
  server.Post("/v1/decisions", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"id\":99,\"line\":5}\n{\"status\":200}", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  HttpSender sender({"http://127.0.0.1:" + std::to_string(port)}, 0, std::chrono::seconds(5));
  const auto items =
      parse_batch_input("{\"state\": 1, \"questions\": {\"q\": {\"type\": \"noul\"}}}\n");
  const Answer a = sender.send(items.at(0), 0);
  server.stop();
  t.join();
  EXPECT_EQ(a.status, 0);
  EXPECT_EQ(a.code, "invalid_response");
  EXPECT_THROW(HttpSender({"http://127.0.0.1:99999"}, 0), Error);
  EXPECT_THROW(HttpSender({"ftp://x"}, 0), Error);
}

TEST(HttpSender, AnApiKeyGoesAsBearerAndA401IsNotRetried) {
  httplib::Server server;
  std::atomic<int> posts{0};
  server.Post("/v1/decisions", [&posts](const httplib::Request& req, httplib::Response& res) {
    ++posts;
    if (req.get_header_value("Authorization") == "Bearer sk-batch") {
      res.set_content(R"({"id":"x"})", "application/json");
    } else {
      res.status = 401;
      res.set_content(R"({"error":{"message":"no key"}})", "application/json");
    }
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const auto items =
      parse_batch_input("{\"state\": 1, \"questions\": {\"q\": {\"type\": \"noul\"}}}\n");
  const Answer keyed =
      HttpSender({url}, 3, std::chrono::seconds(5), "sk-batch").send(items.at(0), 0);
  const Answer keyless = HttpSender({url}, 3, std::chrono::seconds(5)).send(items.at(0), 0);
  server.stop();
  t.join();
  EXPECT_EQ(keyed.status, 200);
  EXPECT_EQ(keyless.status, 401);
  EXPECT_EQ(keyless.attempts, 1) << "a 401 is not retried";
  EXPECT_EQ(posts.load(), 2);
}

/// What the response body cannot say comes from the server's headers into the record: a cut
/// state, the ignored fields named (%XX decoded) and those the header had no room for counted, not
/// named (a reported input: its "...+8" became a field named "...+8").
TEST(HttpSender, TruncationAndIgnoredFieldsComeFromTheHeaders) {
  httplib::Server server;
  server.Post("/v1/decisions", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-Clef-Truncated-Tokens", "12");
    res.set_header("X-Clef-Ignored-Fields", "temperature,x%2By,...+3");
    res.set_content(R"({"model":"m","answers":{}})", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto items =
      parse_batch_input("{\"state\": 1, \"questions\": {\"q\": {\"type\": \"noul\"}}}\n");
  const Answer a =
      HttpSender({"http://127.0.0.1:" + std::to_string(port)}, 0, std::chrono::seconds(5))
          .send(items.at(0), 0);
  server.stop();
  t.join();
  ASSERT_EQ(a.status, 200) << a.message;
  EXPECT_EQ(a.truncated_tokens, 12);
  EXPECT_EQ(a.ignored_fields, (std::vector<std::string>{"temperature", "x+y"}));
  EXPECT_EQ(a.ignored_fields_unlisted, 3);
  const std::string record =
      answer_record({json::Value::string("r1"), 1, ""}, 200, a.body, a.truncated_tokens,
                    a.ignored_fields, a.ignored_fields_unlisted);
  EXPECT_NE(record.find(R"("truncated_tokens":12,"ignored_fields":["temperature","x+y"],)"
                        R"("ignored_fields_unlisted":3})"),
            std::string::npos)
      << record;
}

}  // namespace
}  // namespace clef::batch
