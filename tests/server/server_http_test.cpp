// The HTTP server end to end on 127.0.0.1 with the fake engine: endpoints, every error status with
// its JSON body, queue limits, loading and draining, concurrency, misbehaving clients.

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <thread>

#include "json/parse.hpp"
#include "json/render.hpp"
#include "raw_socket.hpp"
#include "server/endpoints.hpp"
#include "server_fixture.hpp"

namespace clef::server {
namespace {

using testing::metric_value;
using testing::RawSocket;
using testing::ServerFixture;
using testing::test_config;
using namespace std::chrono_literals;

const char* kCard = R"({"state":"Production database is down, customers cannot log in",)"
                    R"("questions":{"department":{"type":"choice","criteria":{"engineering":"eng",)"
                    R"("sales":"sales","support":"support"}},"urgency":{"type":"score","criteria":)"
                    R"(["low","medium","high","critical"]},"outage":{"type":"noul"}}})";

/// The bytes the fake engine answers for `body` when the server fills in `model`.
std::string expected_answer(ServerFixture& f, const std::string& body,
                            const std::string& model = "fake-model") {
  json::Value request = json::parse(body);
  if (!request.find("model")) request.set("model", json::Value::string(model));
  runtime::Engine reference = testing::fake_engine(f.control, model);
  return reference.decide(request).body;
}

/// Asserts an error answer: status, JSON body {"error":{message,type,code,param},"detail":message},
/// request id.
void expect_error(const httplib::Result& res, int status, const std::string& code,
                  const std::string& param = "") {
  ASSERT_TRUE(res) << "no answer: " << httplib::to_string(res.error());
  EXPECT_EQ(res->status, status) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_FALSE(res->get_header_value("X-Request-Id").empty());
  // TypeSafe's SDKs read the id from x-typesafe-request-id: the same id.
  EXPECT_EQ(res->get_header_value("x-typesafe-request-id"), res->get_header_value("X-Request-Id"));
  json::Value body = json::parse(res->body);
  const json::Value* error = body.find("error");
  ASSERT_NE(error, nullptr) << res->body;
  ASSERT_EQ(error->members().size(), 4u) << res->body;
  EXPECT_EQ(error->members()[0].first, "message");
  EXPECT_EQ(error->members()[1].first, "type");
  EXPECT_EQ(error->members()[2].first, "code");
  EXPECT_EQ(error->members()[3].first, "param");
  EXPECT_FALSE(error->find("message")->as_string().empty());
  // FastAPI-style clients (TypeSafe's n8n node) read the message from a top-level `detail`.
  ASSERT_EQ(body.members().size(), 2u) << res->body;
  ASSERT_NE(body.find("detail"), nullptr) << res->body;
  EXPECT_EQ(body.find("detail")->as_string(), error->find("message")->as_string());
  EXPECT_EQ(error->find("code")->as_string(), code) << res->body;
  if (param.empty())
    EXPECT_TRUE(error->find("param")->is_null()) << res->body;
  else
    EXPECT_EQ(error->find("param")->as_string(), param) << res->body;
}

httplib::Result post(ServerFixture& f, const std::string& body,
                     const std::string& path = "/v1/decisions") {
  return f.client()->Post(path.c_str(), body, "application/json");
}

std::string metrics_text(ServerFixture& f) {
  auto res = f.client()->Get("/metrics");
  return res ? res->body : std::string();
}

/// Polls /metrics until `name` has `value`; false after 5 s.
bool wait_metric(ServerFixture& f, const std::string& name, double value) {
  auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    if (metric_value(metrics_text(f), name) == value) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

TEST(ServerHttp, ARangeHeaderIsIgnoredOnADecisionAndWhenItDoesNotParse) {
  // A break test: a POST with "Range: bytes=999999-" was decided, then answered 416
  // (cmake/patches/cpp-httplib-range-only-on-get.diff).
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  auto decided =
      f.client()->Post("/v1/decisions", {{"Range", "bytes=999999-"}}, kCard, "application/json");
  ASSERT_TRUE(decided);
  EXPECT_EQ(decided->status, 200) << decided->body;
  auto health = f.client()->Get("/health", httplib::Headers{{"Range", "garbage"}});
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(ServerHttp, HealthModelsAndMetrics) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  auto health = f.client()->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, R"({"status":"ok"})");
  EXPECT_FALSE(health->get_header_value("X-Request-Id").empty());
  EXPECT_EQ(f.client()->Head("/health")->status, 200);

  auto models = f.client()->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  EXPECT_EQ(models->body, R"({"object":"list","data":[{"id":"fake-model","object":"model",)"
                          R"("owned_by":"clef","context_size":4096,"answers":)"
                          R"({"calibration":null,"confidence":"reference"}}],)"
                          R"("models":[{"name":"fake-model","description":)"
                          R"("typed decisions served by clef","release_date":""}]})");

  auto decided = post(f, kCard);
  ASSERT_TRUE(decided);
  ASSERT_EQ(decided->status, 200);
  int tokens =
      std::stoi(json::parse(decided->body).find("usage")->find("input_tokens")->integer_digits());

  std::string text = metrics_text(f);
  EXPECT_EQ(
      metric_value(text, R"(clef_http_requests_total{endpoint="/v1/decisions",status="200"})"), 1);
  EXPECT_EQ(metric_value(text, R"(clef_http_requests_total{endpoint="/health",status="200"})"), 2);
  EXPECT_EQ(metric_value(text, "clef_input_tokens_total"), tokens);
  EXPECT_EQ(metric_value(text, "clef_decision_duration_seconds_count"), 1);
  EXPECT_EQ(metric_value(text, "clef_model_loaded"), 1);
  EXPECT_GE(metric_value(text, "clef_model_load_seconds"), 0);
  EXPECT_EQ(metric_value(text, "clef_queue_depth"), 0);
  EXPECT_EQ(metric_value(text, "clef_decisions_in_flight"), 0);
}

TEST(ServerHttp, BothDecisionPathsAnswerTheEnginesBytes) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  auto a = post(f, kCard, "/v1/decisions");
  auto b = post(f, kCard, "/v1/systemone");
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(a->body, expected_answer(f, kCard));
  EXPECT_EQ(b->body, a->body);
  EXPECT_EQ(json::parse(a->body).find("model")->as_string(), "fake-model");
  EXPECT_NE(a->get_header_value("X-Request-Id"), b->get_header_value("X-Request-Id"));
  EXPECT_EQ(a->get_header_value("x-typesafe-request-id"), a->get_header_value("X-Request-Id"));
  EXPECT_EQ(b->get_header_value("x-typesafe-request-id"), b->get_header_value("X-Request-Id"));
}

TEST(ServerHttp, ModelDefaultsToTheServedNameAndIsEchoed) {
  ServerFixture f(test_config(), "my-alias");
  ASSERT_TRUE(f.wait_ready());
  auto res = post(f, kCard);
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body).find("model")->as_string(), "my-alias");
  std::string named = R"({"model":"clef-flash","state":"x","questions":{"q":{"type":"noul"}}})";
  res = post(f, named);
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body).find("model")->as_string(), "clef-flash");
}

TEST(ServerHttp, ClientRequestIdIsKept) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  auto res =
      f.client()->Post("/v1/decisions", {{"X-Request-Id", "trace-77"}}, kCard, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("X-Request-Id"), "trace-77");
}

TEST(ServerHttp, BadRequestsAre400NamingTheField) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  expect_error(post(f, R"({"state": "x", "questions": )"), 400, "invalid_json");
  expect_error(post(f, R"(["not", "an", "object"])"), 400, "invalid_request");
  expect_error(post(f, R"({"model": 5, "state": "x", "questions": {"q": {"type": "noul"}}})"), 400,
               "invalid_request", "model");
  expect_error(post(f, R"({"state": "x"})"), 400, "invalid_request", "questions");
  expect_error(post(f, ""), 400, "invalid_json");
  std::string deep(200, '[');
  expect_error(post(f, deep + std::string(200, ']')), 400, "invalid_json");
}

/// --validation-status 422 (TypeSafe's hosted API, the SDKs' UnprocessableEntityError): a
/// well-formed request whose fields the contract refuses is 422 naming the field; malformed JSON,
/// a limit (413) and a refusal another server may serve stay as they are.
TEST(ServerHttp, ValidationStatus422AppliesOnlyToRefusedFieldsOfWellFormedJson) {
  ServerConfig config = test_config();
  config.validation_status = 422;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  expect_error(post(f, R"({"state": "x"})"), 422, "invalid_request", "questions");
  expect_error(post(f, R"({"model": 5, "state": "x", "questions": {"q": {"type": "noul"}}})"), 422,
               "invalid_request", "model");
  expect_error(post(f, R"(["not", "an", "object"])"), 422, "invalid_request");
  expect_error(post(f, R"({"state": "x", "questions": )"), 400, "invalid_json");
  expect_error(post(f, ""), 400, "invalid_json");
  std::string many = R"({"state": "x", "questions": {"q0": {"type": "noul"})";
  for (int i = 1; i < 65; ++i) {
    many += R"(, "q)";
    many += std::to_string(i);
    many += R"(": {"type": "noul"})";
  }
  many += "}}";
  expect_error(post(f, many), 413, "too_many_questions", "questions");
  auto ok = post(f, kCard);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(ServerHttp, UnknownPathIs404AndWrongMethodIs405) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  expect_error(f.client()->Get("/v2/nothing"), 404, "not_found");
  expect_error(post(f, kCard, "/v1/decision"), 404, "not_found");
  auto get = f.client()->Get("/v1/decisions");
  expect_error(get, 405, "method_not_allowed");
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  auto post_health = post(f, "{}", "/health");
  expect_error(post_health, 405, "method_not_allowed");
  EXPECT_EQ(post_health->get_header_value("Allow"), "GET, HEAD");
  expect_error(f.client()->Delete("/v1/systemone"), 405, "method_not_allowed");
  // The server still serves afterwards on fresh connections.
  EXPECT_EQ(post(f, kCard)->status, 200);
}

TEST(ServerHttp, OversizedBodiesAre413) {
  ServerFixture f;  // max body 4096 bytes
  ASSERT_TRUE(f.wait_ready());
  std::string big =
      R"({"state":")" + std::string(5000, 'x') + R"(","questions":{"q":{"type":"noul"}}})";
  auto res = post(f, big);
  expect_error(res, 413, "request_too_large");
  EXPECT_EQ(res->get_header_value("Connection"), "close");
  // A record over the context with --truncation refuse (the decider's 413).
  expect_error(post(f, R"({"state":"too-long","questions":{"q":{"type":"noul"}}})"), 413,
               "context_length_exceeded", "state");
  EXPECT_EQ(post(f, kCard)->status, 200);
}

TEST(ServerHttp, OversizedBodyIsRefusedBeforeItIsSent) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  // With Expect: 100-continue the client waits for permission; the server refuses from the
  // headers at once, so not one body byte is needed. (httplib then keeps the connection until
  // its keep-alive timeout; the answer itself comes first.)
  RawSocket raw(f.port);
  ASSERT_TRUE(raw.valid());
  ASSERT_TRUE(
      raw.send_all("POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Content-Type: application/json\r\nContent-Length: 1000000000\r\n"
                   "Expect: 100-continue\r\n\r\n"));
  std::string answer = raw.read_until("request_too_large", 500ms);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_NE(answer.find("request_too_large"), std::string::npos);
  // Without Expect: the headers alone still decide; the connection is closed after the answer.
  RawSocket raw2(f.port);
  ASSERT_TRUE(
      raw2.send_all("POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{"));
  answer = raw2.read_until("request_too_large", 500ms);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_NE(answer.find("X-Request-Id: "), std::string::npos);
}

TEST(ServerHttp, ChunkedBodiesAreReadAndLimited) {
  ServerFixture f;  // max body 4096 bytes
  ASSERT_TRUE(f.wait_ready());
  auto chunked = [](const std::string& body) {
    std::string out;
    for (std::size_t i = 0; i < body.size(); i += 1000) {
      std::string part = body.substr(i, 1000);
      char size[16];
      std::snprintf(size, sizeof size, "%zx\r\n", part.size());
      out += size + part + "\r\n";
    }
    return out + "0\r\n\r\n";
  };
  const std::string head =
      "POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  RawSocket small(f.port);
  ASSERT_TRUE(small.send_all(head + chunked(kCard)));
  std::string answer = small.read_all(5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find(expected_answer(f, kCard)), std::string::npos) << answer;

  RawSocket big(f.port);
  std::string large = R"({"state":")" + std::string(6000, 'x') + R"(","questions":{}})";
  big.send_all(head + chunked(large));  // the server may close before it has read everything
  answer = big.read_until("request_too_large", 5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
}

TEST(ServerHttp, MalformedRequestGetsAJson400WithARequestId) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  RawSocket raw(f.port);
  ASSERT_TRUE(
      raw.send_all("POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Content-Type: application/json\r\nContent-Length: 12x\r\n\r\n{}"));
  std::string answer = raw.read_until("\"param\":null}}", 5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_NE(answer.find("X-Request-Id: req-"), std::string::npos) << answer;
  EXPECT_NE(answer.find(R"({"error":{"message":)"), std::string::npos) << answer;
}

/// A breaker's input: a method no HTTP server here implements (`FOO /health`) got httplib's
/// "malformed HTTP request" 400. It is a 501 naming the method (RFC 9110 section 9.1), with a
/// request id; a method httplib knows but no route takes stays 404/405, and the server goes on.
TEST(ServerHttp, AnUnknownMethodIsA501NamingIt) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  RawSocket raw(f.port);
  ASSERT_TRUE(raw.send_all("FOO /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const std::string answer = raw.read_until("\"param\":null}}", 5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 501", 0), 0u) << answer;
  EXPECT_NE(answer.find("X-Request-Id: req-"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"code\":\"method_not_implemented\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("the method FOO is not implemented"), std::string::npos) << answer;
  // A breaker's inputs: a request line without a version named no method ("the method -"), and
  // a long method came back whole; the method is named, cut at 64 bytes.
  RawSocket bare(f.port);
  ASSERT_TRUE(bare.send_all("FOO /health\r\nHost: 127.0.0.1\r\n\r\n"));
  const std::string no_version = bare.read_until("\"param\":null}}", 5s);
  EXPECT_EQ(no_version.rfind("HTTP/1.1 501", 0), 0u) << no_version;
  EXPECT_NE(no_version.find("the method FOO is not implemented"), std::string::npos) << no_version;
  RawSocket long_method(f.port);
  ASSERT_TRUE(long_method.send_all(std::string(200, 'X') + " /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string cut = long_method.read_until("\"param\":null}}", 5s);
  EXPECT_EQ(cut.rfind("HTTP/1.1 501", 0), 0u) << cut;
  EXPECT_NE(cut.find(std::string(64, 'X') + "... (200 bytes)"), std::string::npos) << cut;
  EXPECT_EQ(cut.find(std::string(65, 'X')), std::string::npos) << cut;
  RawSocket known(f.port);
  ASSERT_TRUE(
      known.send_all("PUT /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"));
  const std::string put = known.read_until("}}", 5s);
  EXPECT_EQ(put.rfind("HTTP/1.1 405", 0), 0u) << put;
  EXPECT_EQ(f.client()->Get("/health")->status, 200);
}

TEST(ServerHttp, NonJsonContentTypeIs415) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  expect_error(f.client()->Post("/v1/decisions", kCard, "text/plain"), 415,
               "unsupported_media_type");
  expect_error(f.client()->Post("/v1/decisions", "a=b", "application/x-www-form-urlencoded"), 415,
               "unsupported_media_type");
  EXPECT_EQ(f.client()->Post("/v1/decisions", kCard, "application/json; charset=utf-8")->status,
            200);
}

/// A server with queue_size 1 (busy status `overload_status`) and the two requests that fill it:
/// one held at the fake's gate on the runtime thread, one waiting in the queue.
struct FullQueue {
  static ServerConfig one_slot(int overload_status) {
    ServerConfig config = test_config();
    config.queue_size = 1;
    config.overload_status = overload_status;
    return config;
  }
  explicit FullQueue(int overload_status = 429) : f(one_slot(overload_status)) {}

  /// Closes the gate and sends both; false when the queue did not fill.
  bool fill() {
    if (!f.wait_ready()) return false;
    f.control->close_gate();
    // Counted from now: decisions before fill() (the warm-up, a test's own) have started too.
    const int started = f.control->started.load();
    running = std::async(std::launch::async, [this] { return post(f, kCard); });
    if (!f.control->wait_started(started + 1)) return false;  // the running one
    waiting = std::async(std::launch::async, [this] { return post(f, kCard); });
    return wait_metric(f, "clef_queue_depth", 1);
  }
  /// Opens the gate: both are answered 200.
  void release() {
    f.control->open_gate();
    EXPECT_EQ(running.get()->status, 200);
    EXPECT_EQ(waiting.get()->status, 200);
  }

  ServerFixture f;
  std::future<httplib::Result> running;
  std::future<httplib::Result> waiting;
};

TEST(ServerHttp, FullQueueIs429WithRetryAfter) {
  FullQueue q;
  ASSERT_TRUE(q.fill());
  ServerFixture& f = q.f;
  EXPECT_EQ(metric_value(metrics_text(f), "clef_decisions_in_flight"), 1);
  auto refused = post(f, kCard);
  expect_error(refused, 429, "queue_full");
  EXPECT_EQ(refused->get_header_value("Retry-After"), "2");
  // Nothing decided yet (the warm-up does not count): retry-after-ms is Retry-After's.
  EXPECT_EQ(refused->get_header_value("retry-after-ms"), "2000");
  q.release();
  EXPECT_EQ(metric_value(metrics_text(f),
                         R"(clef_http_requests_total{endpoint="/v1/decisions",status="429"})"),
            1);
}

/// Reported: clients that left while their requests waited kept their places until the running
/// decision ended, so a queue full of departed clients answered 429 queue_full to new ones. A
/// departed client's request now leaves the queue as soon as its HTTP thread sees it go.
TEST(ServerHttp, RequestsOfDepartedClientsFreeTheirQueuePlacesAtOnce) {
  ServerConfig config = test_config();
  config.queue_size = 2;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  f.control->close_gate();
  const int started = f.control->started.load();
  auto running = std::async(std::launch::async, [&] { return post(f, kCard); });
  ASSERT_TRUE(f.control->wait_started(started + 1));
  {
    std::vector<std::unique_ptr<RawSocket>> leaving;
    const std::string body = R"({"state":"left","questions":{"q":{"type":"noul"}}})";
    for (int i = 0; i < 2; ++i) {
      leaving.push_back(std::make_unique<RawSocket>(f.port));
      ASSERT_TRUE(leaving.back()->send_all(
          "POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
          "Content-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body));
    }
    ASSERT_TRUE(wait_metric(f, "clef_queue_depth", 2));
  }  // both clients leave while the gate holds the running decision
  // Their places free while the running decision still holds the loop: dropped, depth 0.
  ASSERT_TRUE(wait_metric(f, "clef_decisions_dropped_total", 2));
  EXPECT_EQ(metric_value(metrics_text(f), "clef_queue_depth"), 0);
  auto fresh = std::async(std::launch::async, [&] { return post(f, kCard); });
  ASSERT_TRUE(wait_metric(f, "clef_queue_depth", 1)) << "queued, not refused";
  f.control->open_gate();
  EXPECT_EQ(running.get()->status, 200);
  EXPECT_EQ(fresh.get()->status, 200);
  EXPECT_EQ(f.control->started.load(), started + 2) << "the departed ones never reached it";
}

/// With the default thread setting (auto) the queue can fill: more decision clients at once than
/// --queue-size + running get 429 at once, instead of waiting for an HTTP thread (the old
/// defaults, 64 threads for a 64-deep queue, could never answer 429).
TEST(ServerHttp, TheDefaultThreadsLetAFullQueueAnswer429) {
  ServerConfig config = test_config();
  config.http_threads = ServerConfig{}.http_threads;  // the defaults: auto threads,
  config.queue_size = ServerConfig{}.queue_size;      // a 64-deep queue
  ASSERT_EQ(config.queue_size, 64u);
  EXPECT_EQ(http_threads_for(config, 1), 64 + 1 + kSpareHttpThreads);
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  f.control->close_gate();
  std::vector<std::future<httplib::Result>> clients;
  for (int i = 0; i < 64 + 1 + 6; ++i) {
    clients.push_back(std::async(std::launch::async, [&f] { return post(f, kCard); }));
  }
  // The six beyond the queue and the running one are refused while the gate is still closed.
  ASSERT_TRUE(
      wait_metric(f, R"(clef_http_requests_total{endpoint="/v1/decisions",status="429"})", 6));
  auto health = f.client()->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  f.control->open_gate();
  int ok = 0, busy = 0;
  for (auto& c : clients) {
    auto res = c.get();
    ASSERT_TRUE(res);
    ok += res->status == 200;
    busy += res->status == 429;
  }
  EXPECT_EQ(ok, 65);
  EXPECT_EQ(busy, 6);
}

/// TypeSafe's SDKs retry a 429 after retry-after-ms when it is there: the pace of the recent
/// decisions (here ~150 ms each), not Retry-After's whole seconds.
TEST(ServerHttp, FullQueueSaysRetryAfterMsFromTheRecentDecisions) {
  FullQueue q;
  ServerFixture& f = q.f;
  ASSERT_TRUE(f.wait_ready());
  f.control->delay = 150ms;
  for (int i = 0; i < 3; ++i) {
    auto res = post(f, kCard);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
  }
  ASSERT_TRUE(q.fill());
  auto refused = post(f, kCard);
  expect_error(refused, 429, "queue_full");
  EXPECT_EQ(refused->get_header_value("Retry-After"), "2");
  const long ms = std::stol(refused->get_header_value("retry-after-ms"));
  EXPECT_GE(ms, 140) << "the fake decides in 150 ms";
  EXPECT_LT(ms, 1000) << "the fake decides in 150 ms";
  q.release();
}

/// Requests are validated before they queue: with the runtime thread busy and the queue full, a
/// malformed request still gets its 400 naming the field (not a 429), at once.
TEST(ServerHttp, MalformedRequestsAreRefusedBeforeTheQueue) {
  FullQueue q;
  ASSERT_TRUE(q.fill());
  ServerFixture& f = q.f;
  const auto t0 = std::chrono::steady_clock::now();
  auto junk = post(f, R"({"state":"x","questions":{"q":{"type":"noul","criteria":7}}})");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  expect_error(junk, 400, "invalid_request", "questions.q.criteria");
  expect_error(post(f, R"({"state":"x","questions":{"q":{"type":"noul"}},"model":3})"), 400,
               "invalid_request", "model");
  expect_error(post(f, kCard), 429, "queue_full");  // a valid one finds the queue full
  q.release();
}

TEST(ServerHttp, FullQueueCanAnswer503) {
  FullQueue q(503);
  ASSERT_TRUE(q.fill());
  auto refused = post(q.f, kCard);
  expect_error(refused, 503, "queue_full");
  EXPECT_EQ(refused->get_header_value("Retry-After"), "2");
  q.release();
}

TEST(ServerHttp, InternalFaultIs500AndLoggedWithTheRequestId) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  auto res = post(f, R"({"state":"boom","questions":{"q":{"type":"noul"}}})");
  expect_error(res, 500, "internal_error");
  std::string id = res->get_header_value("X-Request-Id");
  EXPECT_NE(json::parse(res->body).find("error")->find("message")->as_string().find(id),
            std::string::npos);
  EXPECT_EQ(res->body.find("exploded"), std::string::npos) << "internals stay in the log";
  EXPECT_EQ(post(f, kCard)->status, 200);
  f.stop();
  std::string log = f.log_text();
  EXPECT_NE(log.find("error id=" + id + " decision failed: fake decider exploded"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("access id=" + id + " method=POST path=/v1/decisions status=500"),
            std::string::npos)
      << log;
}

TEST(ServerHttp, WhileLoadingHealthAndDecisionsAre503) {
  ServerFixture f(test_config(), "fake-model", /*hold_load=*/true);
  auto health = f.client()->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(health->body, R"({"status":"loading"})");
  auto res = post(f, kCard);
  expect_error(res, 503, "model_loading");
  EXPECT_EQ(res->get_header_value("Retry-After"), "2");
  expect_error(f.client()->Get("/v1/models"), 503, "model_loading");
  EXPECT_EQ(metric_value(metrics_text(f), "clef_model_loaded"), 0);
  f.control->open_load_gate();
  ASSERT_TRUE(f.wait_ready());
  EXPECT_EQ(f.client()->Get("/health")->status, 200);
  EXPECT_EQ(post(f, kCard)->status, 200);
}

TEST(ServerHttp, ShutdownDrainsQueuedAndRunningThenRefuses) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  f.control->close_gate();
  auto running = std::async(std::launch::async, [&] { return post(f, kCard); });
  ASSERT_TRUE(f.control->wait_started(2));
  std::string other = R"({"state":"queued","questions":{"q":{"type":"noul"}}})";
  auto queued = std::async(std::launch::async, [&] { return post(f, other); });
  ASSERT_TRUE(wait_metric(f, "clef_queue_depth", 1));

  auto stopping = std::async(std::launch::async, [&] { f.server->shutdown(); });
  auto until = std::chrono::steady_clock::now() + 5s;
  while (f.server->health() != Health::draining && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  auto health = f.client()->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(health->body, R"({"status":"draining"})");
  expect_error(post(f, kCard), 503, "shutting_down");
  EXPECT_EQ(stopping.wait_for(50ms), std::future_status::timeout) << "must wait for the decisions";

  f.control->open_gate();
  auto a = running.get();
  auto b = queued.get();
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->body, expected_answer(f, kCard));
  EXPECT_EQ(b->status, 200);
  EXPECT_EQ(b->body, expected_answer(f, other));
  EXPECT_EQ(stopping.wait_for(10s), std::future_status::ready);
  f.stop();
  // Nothing listens any more.
  EXPECT_FALSE(f.client()->Get("/health"));
}

TEST(ServerHttp, SixteenConcurrentRequestsEqualTheirLoneAnswers) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  f.control->delay = 3ms;
  std::vector<std::string> bodies;
  for (int i = 0; i < 16; ++i) {
    bodies.push_back(
        R"({"state":{"ticket":)" + std::to_string(i) +
        R"(,"text":"Production database is down"},"questions":{"outage":{"type":"noul"},)"
        R"("urgency":{"type":"score","criteria":["low","high"]}}})");
  }
  std::vector<std::string> alone;
  for (const auto& body : bodies) {
    auto res = post(f, body);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    alone.push_back(res->body);
  }
  std::set<std::string> distinct(alone.begin(), alone.end());
  EXPECT_EQ(distinct.size(), 16u) << "requests must differ for the comparison to mean something";

  std::vector<std::future<httplib::Result>> together;
  for (int i = 0; i < 16; ++i) {
    together.push_back(std::async(std::launch::async, [&, i] {
      return post(f, bodies[static_cast<std::size_t>(i)],
                  i % 2 ? "/v1/systemone" : "/v1/decisions");
    }));
  }
  for (int i = 0; i < 16; ++i) {
    auto res = together[static_cast<std::size_t>(i)].get();
    ASSERT_TRUE(res) << i << ": " << httplib::to_string(res.error()) << "\n" << f.log_text();
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body, alone[static_cast<std::size_t>(i)]) << i;
  }
  EXPECT_FALSE(f.control->overlapped.load());
}

TEST(ServerHttp, ClientThatVanishesMidBodyDisturbsNobody) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  auto started = std::chrono::steady_clock::now();
  {
    RawSocket raw(f.port);
    ASSERT_TRUE(raw.valid());
    ASSERT_TRUE(
        raw.send_all("POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n" +
                     std::string(R"({"state":")") + std::string(500, 'x')));
  }  // closed mid-body
  // A second client stalls mid-body and stays connected.
  RawSocket stalled(f.port);
  ASSERT_TRUE(
      stalled.send_all("POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"));
  for (int i = 0; i < 8; ++i) {
    auto res = post(f, kCard);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body, expected_answer(f, kCard));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1500ms)
      << "others must not wait for the stalled client's read timeout";
  // The stalled client is cut off by the read timeout (2 s of silence) with a 408: its body is
  // read by the connection loop, which answers a body that stops arriving as one too slow.
  std::string answer = stalled.read_all(6s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
}

TEST(ServerHttp, RequestWhoseClientLeftBeforeItsTurnIsDropped) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  f.control->close_gate();
  auto running = std::async(std::launch::async, [&] { return post(f, kCard); });
  ASSERT_TRUE(f.control->wait_started(2));
  {
    RawSocket raw(f.port);
    std::string body = R"({"state":"left","questions":{"q":{"type":"noul"}}})";
    ASSERT_TRUE(
        raw.send_all("POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(wait_metric(f, "clef_queue_depth", 1));
  }  // the client leaves while its request waits
  // Its HTTP thread looks at the connection every 20 ms while it waits and flags the request;
  // the turn comes well after that.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  f.control->open_gate();
  EXPECT_EQ(running.get()->status, 200);
  ASSERT_TRUE(wait_metric(f, "clef_decisions_dropped_total", 1));
  EXPECT_EQ(f.control->started.load(), 2) << "the dropped request never reached the decider";
  EXPECT_EQ(post(f, kCard)->status, 200);
}

/// Reported: a client that sent CRLFs after a request's body got a 400 for them and its
/// connection closed. Empty lines before a request line are ignored (RFC 9112 section 2.2).
TEST(ServerHttp, EmptyLinesBetweenRequestsAreIgnored) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  RawSocket raw(f.port);
  const std::string request =
      "POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(std::string(kCard).size()) + "\r\n\r\n" + kCard;
  ASSERT_TRUE(raw.send_all(request + "\r\n\r\n"));
  std::string got = raw.read_until("\"usage\"", 10s);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  // The same connection takes the next request, with a blank line before it too.
  ASSERT_TRUE(raw.send_all("\r\n" + request));
  got = raw.read_all(1s);
  EXPECT_EQ(got.find("HTTP/1.1 400"), std::string::npos) << got;
  const auto second = got.find("HTTP/1.1 200");
  EXPECT_NE(second, std::string::npos) << got;
  EXPECT_EQ(metric_value(metrics_text(f),
                         R"(clef_http_requests_total{endpoint="/v1/decisions",status="200"})"),
            2);
}

TEST(ServerHttp, KeepAliveConnectionServesManyRequests) {
  ServerFixture f;
  ASSERT_TRUE(f.wait_ready());
  auto client = f.client();
  client->set_keep_alive(true);
  std::set<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    auto res = client->Post("/v1/decisions", kCard, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    ids.insert(res->get_header_value("X-Request-Id"));
  }
  EXPECT_EQ(ids.size(), 20u);
}

TEST(ServerHttp, AccessLogHasOneLinePerRequest) {
  ServerConfig config = test_config();
  config.log_format = LogFormat::json;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  auto res = post(f, kCard);
  ASSERT_TRUE(res);
  std::string id = res->get_header_value("X-Request-Id");
  f.client()->Get("/nope");
  f.stop();
  std::istringstream lines(f.log_text());
  std::string line;
  int access_lines = 0;
  bool found = false;
  while (std::getline(lines, line)) {
    json::Value v = json::parse(line);
    if (v.find("event")->as_string() != "access") continue;
    ++access_lines;
    if (v.find("id")->as_string() == id) {
      found = true;
      EXPECT_EQ(v.find("status")->integer_digits(), "200");
      EXPECT_EQ(v.find("path")->as_string(), "/v1/decisions");
      EXPECT_EQ(v.find("input_tokens")->integer_digits(),
                json::parse(res->body).find("usage")->find("input_tokens")->integer_digits());
      EXPECT_NE(v.find("queue_wait_ms"), nullptr);
      EXPECT_NE(v.find("decision_ms"), nullptr);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(access_lines, 2);
}

}  // namespace
}  // namespace clef::server

namespace clef::server {
namespace {

/// Issue 52, item 2: 3,000 integers of 4,300 digits (12.9 MB) raised the server's memory by 1.2
/// GB. A request is charged from its body's first byte to the end of its preparation: one over
/// --prepare-memory-per-request is refused with 413 naming the flag, and the next one is served.
TEST(ServerHttp, ARequestOverItsPreparationMemoryIs413AndTheNextIsServed) {
  ServerConfig config = test_config();
  config.max_body_bytes = 1u << 20;
  config.prepare_memory_per_request_bytes = 2u << 20;
  config.prepare_memory_bytes = 4u << 20;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  std::string small_ints = R"({"state":[1)";
  for (int i = 0; i < 400000; ++i) small_ints += ",1";
  small_ints += R"(],"questions":{"q":{"type":"noul"}}})";
  ASSERT_LT(small_ints.size(), config.max_body_bytes);
  auto refused = post(f, small_ints, "/v1/decisions");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 413) << refused->body;
  EXPECT_NE(refused->body.find("--prepare-memory-per-request"), std::string::npos) << refused->body;
  auto served = post(f, kCard, "/v1/decisions");
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200) << served->body;
  EXPECT_EQ(served->body, expected_answer(f, kCard));
}

}  // namespace
}  // namespace clef::server
