// The connection loop (connection_loop.hpp) end to end over raw sockets: a body refused from the
// headers is never parsed as a request (request smuggling), every answer has a Content-Length,
// pipelined requests are answered in order, and slow headers hit the header deadline.

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <thread>
#include <vector>

#include "server/raw_socket.hpp"
#include "server/server_fixture.hpp"

namespace clef::server {
namespace {

using testing::RawSocket;
using testing::ServerFixture;
using testing::test_config;
using namespace std::chrono_literals;

const std::string kInner = R"({"state":"smuggled","questions":{"a":{"type":"noul"}}})";

/// A complete decision request with request id SMUGGLED, hidden as another request's body.
std::string hidden_request() {
  return "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "X-Request-Id: SMUGGLED\r\nContent-Length: " +
         std::to_string(kInner.size()) + "\r\n\r\n" + kInner;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The header block of the first answer in `text`.
std::string first_head(const std::string& text) {
  return text.substr(0, text.find("\r\n\r\n"));
}

/// Sends `head`, then (after `pause`) `hidden_request()` as its body; returns all it reads.
std::string smuggle(int port, const std::string& head, std::chrono::milliseconds pause) {
  RawSocket s(port);
  EXPECT_TRUE(s.valid());
  std::string body = hidden_request();
  s.send_all(head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  std::this_thread::sleep_for(pause);
  s.send_all(body);
  return s.read_all(5s);
}

void expect_refused_alone(const std::string& answer, const std::string& status) {
  EXPECT_EQ(answer.rfind("HTTP/1.1 " + status, 0), 0u) << answer;
  EXPECT_EQ(count(answer, "HTTP/1.1 "), 1u) << answer;  // nothing else was answered
  EXPECT_EQ(answer.find("SMUGGLED"), std::string::npos) << answer;
  std::string head = first_head(answer);
  EXPECT_NE(head.find("Content-Length: "), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close"), std::string::npos) << head;
  EXPECT_EQ(head.find("Keep-Alive"), std::string::npos) << head;
}

TEST(ServerConnection, BodyRefusedFromHeadersIsNeverParsedAsARequest) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  int warmup = f.control->started.load();
  const std::string post = "POST /v1/systemone HTTP/1.1\r\nHost: x\r\n";
  // 415 with the body arriving later, and in the same packet (already buffered).
  for (auto pause : {300ms, 0ms}) {
    expect_refused_alone(smuggle(f.port, post + "Content-Type: text/plain\r\n", pause), "415");
  }
  // 404 and 405 refusals of a request with a body.
  expect_refused_alone(smuggle(f.port, "POST /nowhere HTTP/1.1\r\nHost: x\r\n", 0ms), "404");
  expect_refused_alone(smuggle(f.port, "PUT /v1/systemone HTTP/1.1\r\nHost: x\r\n", 100ms), "405");
  f.stop();
  EXPECT_EQ(f.control->started.load(), warmup);  // the hidden decision never ran
  EXPECT_EQ(f.log_text().find("SMUGGLED"), std::string::npos) << f.log_text();
  EXPECT_EQ(count(f.log_text(), "status=400"), 0u) << f.log_text();  // no fake entries
}

/// The connection loop reads every body before a worker takes the request (so that a slow body
/// holds no worker, issue 52): an "Expect: 100-continue" request gets its "100 Continue" from the
/// loop, then the refusal its headers earn; what its body hides is never parsed. A declared
/// length over --max-body is refused from the headers alone, before any body.
TEST(ServerConnection, ExpectContinueRefusalHasALengthAndHiddenRequestsAreNeverParsed) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  int warmup = f.control->started.load();
  auto t0 = std::chrono::steady_clock::now();
  std::string answer = smuggle(f.port,
                               "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: "
                               "text/plain\r\nExpect: 100-continue\r\n",
                               300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);  // closed, not waiting for a timeout
  const std::string interim = "HTTP/1.1 100 Continue\r\n\r\n";
  ASSERT_EQ(answer.rfind(interim, 0), 0u) << answer;
  expect_refused_alone(answer.substr(interim.size()), "415");
  // 413 from the declared length alone, also via Expect: no 100 Continue first.
  RawSocket s(f.port);
  s.send_all(
      "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Expect: 100-continue\r\nContent-Length: 17000000\r\n\r\n");
  std::string big = s.read_all(3s);
  EXPECT_EQ(big.rfind("HTTP/1.1 413", 0), 0u) << big;
  // New-user finding: the connection loop's 413 named neither the limit nor the flag.
  EXPECT_NE(big.find("over the limit of 4096 bytes (--max-body)"), std::string::npos) << big;
  EXPECT_NE(first_head(big).find("Content-Length: "), std::string::npos) << big;
  f.stop();
  EXPECT_EQ(f.control->started.load(), warmup);
}

/// curl sends "Expect: 100-continue" for large bodies (image requests): an accepted one gets
/// "100 Continue", is decided once and its answer carries exactly one X-Request-Id, the logged one
/// (cpp-httplib 0.11.4 ran the pre-routing callback twice there and answered with two ids).
TEST(ServerConnection, AcceptedExpectContinueIsAnsweredOnceWithOneRequestId) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  int warmup = f.control->started.load();
  RawSocket s(f.port);
  ASSERT_TRUE(
      s.send_all("POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 "application/json\r\nExpect: 100-continue\r\nContent-Length: " +
                 std::to_string(kInner.size()) + "\r\n\r\n"));
  std::string interim = s.read_until("\r\n\r\n", 3s);
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << interim;
  ASSERT_TRUE(s.send_all(kInner));
  std::string answer =
      interim.substr(interim.find("\r\n\r\n") + 4) + s.read_until("\"output_tokens\":0}}", 3s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_EQ(count(answer, "X-Request-Id: "), 1u) << answer;
  auto at = answer.find("X-Request-Id: ");
  ASSERT_NE(at, std::string::npos);
  std::string id = answer.substr(at + 14, answer.find("\r\n", at) - at - 14);
  f.stop();
  EXPECT_EQ(f.control->started.load(), warmup + 1);
  std::string log = f.log_text();
  EXPECT_EQ(count(log, "status=200"), 1u) << log;
  EXPECT_NE(log.find("id=" + id + " method=POST path=/v1/decisions status=200"), std::string::npos)
      << log;
}

TEST(ServerConnection, PipelinedRequestsAreAnsweredInOrder) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  RawSocket s(f.port);
  std::string requests;
  for (const char* path : {"/health", "/v1/models", "/health"}) {
    requests += std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\nX-Request-Id: pipe-" +
                (path + 1) + std::to_string(requests.size()) + "\r\n\r\n";
  }
  ASSERT_TRUE(s.send_all(requests));
  std::string answer = s.read_all(3s);
  EXPECT_EQ(count(answer, "HTTP/1.1 200 OK"), 3u) << answer;
  auto health = answer.find("\"status\":\"ok\"");
  auto models = answer.find("fake-model");
  auto health2 = answer.find("\"status\":\"ok\"", models);
  EXPECT_LT(health, models);
  EXPECT_NE(health2, std::string::npos) << answer;
}

TEST(ServerConnection, SlowHeadersHitTheHeaderDeadlineAndDoNotLockOthersOut) {
  ServerConfig config = test_config();
  config.http_threads = 4;
  config.timeouts.header_s = 2;
  config.timeouts.read_s = 5;  // each line arrives well within the per-read timeout
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 8; ++i) {  // twice the worker threads
    slow.push_back(std::make_unique<RawSocket>(f.port));
    slow.back()->send_all("GET /health HTTP/1.1\r\nHost: x\r\n");
  }
  auto t0 = std::chrono::steady_clock::now();
  std::thread dripper([&] {
    for (int round = 0; round < 12; ++round) {
      for (auto& s : slow) s->send_all("X-a: b\r\n");
      std::this_thread::sleep_for(500ms);
    }
  });
  // Two rounds of deadlines at most (8 slow connections, 4 threads), then a normal request.
  auto res = f.client()->Get("/health");
  auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(waited, 5s + 500ms);
  dripper.join();
  std::string answer = slow.front()->read_all(1s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_NE(first_head(answer).find("Connection: close"), std::string::npos) << answer;
}

TEST(ServerConnection, FramingAndEncodingProblemsAreRefusedAtOnce) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  int warmup = f.control->started.load();
  const std::string post =
      "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  const std::string length = "Content-Length: " + std::to_string(kInner.size()) + "\r\n";
  struct Case {
    std::string name, head, status, code;
  };
  const std::vector<Case> cases = {
      {"negative length", post + "Content-Length: -5\r\n", "400", "invalid_request"},
      {"23-digit length", post + "Content-Length: 99999999999999999999999\r\n", "400",
       "invalid_request"},
      {"no length", post, "411", "length_required"},
      {"conflicting lengths", post + length + "Content-Length: 5\r\n", "400", "invalid_request"},
      {"length and chunked", post + length + "Transfer-Encoding: chunked\r\n", "400",
       "invalid_request"},
      {"gzip transfer coding", post + "Transfer-Encoding: gzip\r\n", "400", "invalid_request"},
      {"gzip body", post + length + "Content-Encoding: gzip\r\n", "415",
       "unsupported_content_encoding"},
      {"br body", post + length + "Content-Encoding: br\r\n", "415",
       "unsupported_content_encoding"},
      {"latin-1 body",
       "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json; "
       "charset=ISO-8859-1\r\n" +
           length,
       "415", "unsupported_charset"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawSocket s(f.port);
    auto t0 = std::chrono::steady_clock::now();
    s.send_all(c.head + "\r\n" + kInner + hidden_request());
    std::string answer = s.read_all(5s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);  // at once, then closed
    EXPECT_EQ(answer.rfind("HTTP/1.1 " + c.status, 0), 0u) << answer;
    EXPECT_NE(answer.find("\"code\":\"" + c.code + "\""), std::string::npos) << answer;
    EXPECT_EQ(count(answer, "HTTP/1.1 "), 1u) << answer;
    if (c.code == "unsupported_content_encoding") {
      EXPECT_NE(answer.find(c.name.substr(0, c.name.find(' '))), std::string::npos) << answer;
    }
  }
  // utf-8 spelled any way is fine.
  RawSocket ok(f.port);
  ok.send_all(
      "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json; "
      "charset=\"UTF-8\"\r\nConnection: close\r\n" +
      length + "\r\n" + kInner);
  std::string answer = ok.read_all(5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  f.stop();
  EXPECT_EQ(f.control->started.load(), warmup + 1);  // only the utf-8 request was decided
}

/// `n` header fields "X-<i>: v", each with its CRLF.
std::string short_headers(int n) {
  std::string h;
  for (int i = 0; i < n; ++i) h += "X-" + std::to_string(i) + ": v\r\n";
  return h;
}

/// Break-test findings on cpp-httplib 0.57.1 (issue 13, item 4): each oversized or doubled header
/// gets its own clear status with a JSON body and a request id, and the server answers right after.
TEST(ServerConnection, OversizedAndDoubledHeadersGetTheirOwnStatuses) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  int warmup = f.control->started.load();
  struct Case {
    std::string name, request, status, code;
  };
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n";
  const std::vector<Case> cases = {
      // 0.57.1 closed without a word on a request line past its 32 KiB line reader.
      {"40 KB request line", "GET /" + std::string(40000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n",
       "414", "uri_too_long"},
      {"request line without its end", "GET /" + std::string(40000, 'a'), "414", "uri_too_long"},
      {"1 MB header", health + "X-Big: " + std::string(1 << 20, 'a') + "\r\n\r\n", "431",
       "headers_too_large"},
      {"10 KB header line", health + "X-Big: " + std::string(10000, 'a') + "\r\n\r\n", "431",
       "headers_too_large"},
      {"101 header fields", health + short_headers(100) + "\r\n", "431", "headers_too_large"},
      {"200 KB of short headers", health + short_headers(20000) + "\r\n", "431",
       "headers_too_large"},
      // Two Transfer-Encoding lines are one list, "chunked, identity": not plain chunked.
      {"chunked then identity",
       "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n" +
           hidden_request(),
       "400", "invalid_request"},
      // A chunk declared at 40 MB with a few bytes sent: 413 at once (was 400 after the read
      // timeout; cmake/patches/cpp-httplib-declared-chunk-size.diff).
      {"40 MB chunk",
       "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Transfer-Encoding: chunked\r\n\r\n2625a00\r\n" +
           kInner,
       "413", "request_too_large"},
      {"space before the colon",
       "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Transfer-Encoding : chunked\r\nContent-Length: " +
           std::to_string(kInner.size()) + "\r\n\r\n" + kInner,
       "400", "invalid_request"},
      {"chunk size 0x28b",
       "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Transfer-Encoding: chunked\r\n\r\n0x28b\r\n" +
           kInner + "\r\n0\r\n\r\n",
       "400", "invalid_request"},
      {"chunked twice",
       "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" +
           hidden_request(),
       "400", "invalid_request"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawSocket s(f.port);
    auto t0 = std::chrono::steady_clock::now();
    s.send_all(c.request);
    std::string answer = s.read_until("}}", 5s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    EXPECT_EQ(answer.rfind("HTTP/1.1 " + c.status, 0), 0u) << answer.substr(0, 300);
    EXPECT_NE(answer.find("\"code\":\"" + c.code + "\""), std::string::npos)
        << answer.substr(0, 300);
    EXPECT_NE(first_head(answer).find("X-Request-Id: "), std::string::npos)
        << answer.substr(0, 300);
    EXPECT_EQ(answer.find("SMUGGLED"), std::string::npos);
    auto ok = f.client()->Get("/health");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
  }
  // A legal chunk extension is accepted.
  {
    RawSocket ext(f.port);
    std::ostringstream size;
    size << std::hex << kInner.size();
    ext.send_all(
        "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
        size.str() + ";foo=bar\r\n" + kInner + "\r\n0\r\n\r\n");
    std::string accepted = ext.read_all(5s);
    EXPECT_EQ(accepted.rfind("HTTP/1.1 200", 0), 0u) << accepted;
  }
  // A path that decodes to bytes that are not UTF-8: the 404's JSON stays ASCII.
  RawSocket s(f.port);
  s.send_all("GET /x%ff%fe HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string answer = s.read_until("}}", 5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 404", 0), 0u) << answer;
  for (unsigned char c : answer) EXPECT_LT(c, 0x80) << answer;
  f.stop();
  EXPECT_EQ(f.control->started.load(), warmup + 1);  // only the chunk-extension request
}

/// A body still arriving at the body deadline gets 408, also when the deadline falls between two
/// of its bytes (a wait rounded down once ended the read early: 400 for 3 of 8 slow clients).
TEST(ServerConnection, SlowBodyAtTheDeadlineGets408) {
  ServerConfig config = test_config();
  config.timeouts.body_s = 1;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  std::vector<std::thread> clients;
  std::vector<std::string> answers(4);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    clients.emplace_back([&, i] {
      RawSocket s(f.port);
      s.send_all(
          "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Content-Length: " +
          std::to_string(kInner.size()) + "\r\n\r\n");
      for (std::size_t k = 0; k + 1 < kInner.size() && k < 40; ++k) {
        if (!s.send_all(kInner.substr(k, 1))) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(37 + 3 * static_cast<int>(i)));
      }
      answers[i] = s.read_until("}}", 3s);
    });
  }
  for (auto& t : clients) t.join();
  for (const std::string& answer : answers) {
    EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  }
}

TEST(ServerConnection, DecisionWhoseClientLeftIsCancelledAndTheNextOneRuns) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  int warmup = f.control->started.load();
  {
    RawSocket s(f.port);
    const std::string body = R"({"state":"forever","questions":{"a":{"type":"noul"}}})";
    s.send_all(
        "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "X-Request-Id: gone-1\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    ASSERT_TRUE(f.control->wait_started(warmup + 1));
  }  // the client gives up while its decision runs
  auto t0 = std::chrono::steady_clock::now();
  while (f.control->cancelled.load() == 0 && std::chrono::steady_clock::now() - t0 < 5s) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(f.control->cancelled.load(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);  // not the fake's 10 s
  auto next = f.client()->Post("/v1/decisions", kInner, "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
  f.stop();
  std::string log = f.log_text();
  EXPECT_NE(log.find("client gone: decision cancelled"), std::string::npos) << log;
  EXPECT_NE(log.find("id=gone-1 method=POST path=/v1/decisions status=499"), std::string::npos)
      << log;
}

TEST(ServerConnection, A499SaysClientClosedRequestInItsStatusLine) {
  // cpp-httplib 0.57.1 wrote "499 Internal Server Error"
  // (cmake/patches/cpp-httplib-499-reason.diff).
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  const int warmup = f.control->started.load();
  RawSocket s(f.port);
  const std::string body = R"({"state":"forever","questions":{"a":{"type":"noul"}}})";
  s.send_all(
      "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_TRUE(f.control->wait_started(warmup + 1));
  s.shutdown_write();  // gone as far as the server can tell, but still reading
  const std::string answer = s.read_until("\r\n\r\n", 5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 499 Client Closed Request\r\n", 0), 0u) << answer;
}

/// Reported by the breaker (issue 52): two "Expect: 100-continue" lines got two 100s (the second
/// after the body); a trailer section ended by a bare LF waited for the read timeout (408) instead
/// of a 400; a chunk size with 16 hex digits of leading zeros was refused.
TEST(ServerConnection, ExpectTwiceTrailersWithABareLfAndLeadingZeroChunkSizes) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  RawSocket twice(f.port);
  ASSERT_TRUE(
      twice.send_all("POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     "application/json\r\nExpect: 100-continue\r\nEXPECT: 100-Continue\r\n"
                     "Content-Length: " +
                     std::to_string(kInner.size()) + "\r\n\r\n"));
  const std::string interim = twice.read_until("\r\n\r\n", 3s);
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << interim;
  ASSERT_TRUE(twice.send_all(kInner));
  const std::string answer = interim + twice.read_until("\"output_tokens\":0}}", 3s);
  EXPECT_EQ(count(answer, "100 Continue"), 1u) << answer;
  EXPECT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;

  const std::string chunked =
      "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  char size[32];
  std::snprintf(size, sizeof size, "%016zx\r\n", kInner.size());
  RawSocket zeros(f.port);
  ASSERT_TRUE(zeros.send_all(chunked + size + kInner + "\r\n0\r\n\r\n"));
  const std::string decided = zeros.read_until("\"output_tokens\":0}}", 3s);
  EXPECT_EQ(decided.rfind("HTTP/1.1 200", 0), 0u) << decided;

  const auto start = std::chrono::steady_clock::now();
  RawSocket bare(f.port);
  ASSERT_TRUE(bare.send_all(chunked + size + kInner + "\r\n0\r\n\n"));
  const std::string refused = bare.read_all(3s);
  EXPECT_EQ(refused.rfind("HTTP/1.1 400", 0), 0u) << refused;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

}  // namespace
}  // namespace clef::server
