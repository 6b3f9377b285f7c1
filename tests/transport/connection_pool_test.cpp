// The connection pool (connection_pool.hpp) end to end: probes are served on the reserved lane
// while every general worker holds a decision, a request no worker can take is answered busy
// without one, idle keep-alive connections and slow header senders hold no worker, and the
// request-line look that picks the lane.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

#include "json/parse.hpp"
#include "server/endpoints.hpp"
#include "server/raw_socket.hpp"
#include "server/server_fixture.hpp"

namespace clef::server {
namespace {

using testing::RawSocket;
using testing::ServerFixture;
using testing::test_config;
using namespace std::chrono_literals;

const std::string kCard = R"({"state":"Production database is down",)"
                          R"("questions":{"outage":{"type":"noul"}}})";

httplib::Result post(const ServerFixture& f) {
  return f.client()->Post("/v1/decisions", kCard, "application/json");
}

TEST(LightRequest, OnlyProbesOfHealthMetricsAndModelsAreLight) {
  EXPECT_TRUE(is_light_request("GET /health HTTP/1.1\r\n"));
  EXPECT_TRUE(is_light_request("HEAD /health HTTP/1.1\r\n"));
  EXPECT_TRUE(is_light_request("GET /metrics?x=1 HTTP/1.1\r\n"));
  EXPECT_TRUE(is_light_request("GET /v1/models HTTP/1.1\r\n"));
  EXPECT_FALSE(is_light_request("POST /health HTTP/1.1\r\n"));
  EXPECT_FALSE(is_light_request("GET /healthz HTTP/1.1\r\n"));
  EXPECT_FALSE(is_light_request("GET /v1/decisions HTTP/1.1\r\n"));
  EXPECT_FALSE(is_light_request("GET / HTTP/1.1\r\n"));
  EXPECT_FALSE(is_light_request("get /health HTTP/1.1\r\n"));
  EXPECT_FALSE(is_light_request("GET /heal"));  // the target has not all arrived
  EXPECT_FALSE(is_light_request(""));
}

/// Two general workers, both holding a decision (one running, one queued, the decider gated):
/// /health, /metrics and /v1/models are still answered, and a third decision gets the overload
/// status at once (no worker could take it), not a wait for the gate.
TEST(ConnectionPool, ProbesAndBusyAnswersNeedNoGeneralWorker) {
  ServerConfig config = test_config();
  config.http_threads = 2;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  const int warmup = f.control->started.load();
  f.control->close_gate();
  auto first = std::async(std::launch::async, [&f] { return post(f); });
  ASSERT_TRUE(f.control->wait_started(warmup + 1));
  auto second = std::async(std::launch::async, [&f] { return post(f); });
  std::this_thread::sleep_for(200ms);  // the second one holds the other worker, queued

  for (const char* path : {"/health", "/metrics", "/v1/models"}) {
    auto res = f.client()->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
  }
  auto busy = post(f);
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 429);
  EXPECT_EQ(busy->get_header_value("Retry-After"), "2");
  EXPECT_EQ(busy->get_header_value("Connection"), "close");
  EXPECT_NE(busy->body.find(R"("code":"server_busy")"), std::string::npos) << busy->body;
  EXPECT_NE(busy->body.find(R"("type":"overloaded_error")"), std::string::npos) << busy->body;
  EXPECT_FALSE(busy->get_header_value("X-Request-Id").empty());
  EXPECT_EQ(first.wait_for(0ms), std::future_status::timeout) << "still gated";

  f.control->open_gate();
  for (auto* pending : {&first, &second}) {
    auto res = pending->get();
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  }
  auto metrics = f.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(
      metrics->body.find(R"(clef_http_requests_total{endpoint="/v1/decisions",status="429"} 1)"),
      std::string::npos)
      << metrics->body;
}

/// --overload-status 503 is what a busy answer says too.
TEST(ConnectionPool, BusyAnswersUseTheOverloadStatus) {
  ServerConfig config = test_config();
  config.http_threads = 1;
  config.overload_status = 503;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  const int warmup = f.control->started.load();
  f.control->close_gate();
  auto held = std::async(std::launch::async, [&f] { return post(f); });
  ASSERT_TRUE(f.control->wait_started(warmup + 1));
  auto busy = post(f);
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503);
  EXPECT_NE(busy->body.find(R"("code":"server_busy")"), std::string::npos) << busy->body;
  f.control->open_gate();
  auto res = held.get();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

/// One general worker and five idle keep-alive connections: a sixth client is served at once
/// (idle connections are parked, not holding the worker), and the idle ones still work.
TEST(ConnectionPool, IdleKeepAliveConnectionsHoldNoWorker) {
  ServerConfig config = test_config();
  config.http_threads = 1;
  config.timeouts.keep_alive_s = 30;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  std::vector<std::unique_ptr<httplib::Client>> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(f.client());
    idle.back()->set_keep_alive(true);
    auto res = idle.back()->Post("/v1/decisions", kCard, "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
  }
  auto other = f.client();
  other->set_read_timeout(3, 0);  // the keep-alive timeout is 30 s: a held worker would show
  auto res = other->Post("/v1/decisions", kCard, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  for (auto& c : idle) {
    auto again = c->Post("/v1/decisions", kCard, "application/json");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 200);
  }
}

/// Eight connections sending headers a line every 300 ms and one general worker: a decision is
/// still served (the poller reads headers, no worker waits for them), and each slow one gets 408
/// once its header deadline passes.
TEST(ConnectionPool, SlowHeaderSendersHoldNoWorker) {
  ServerConfig config = test_config();
  config.http_threads = 1;
  config.timeouts.header_s = 2;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(std::make_unique<RawSocket>(f.port));
    slow.back()->send_all("POST /v1/decisions HTTP/1.1\r\nHost: x\r\n");
  }
  std::atomic<bool> dripping{true};
  std::thread dripper([&] {
    for (int round = 0; round < 20 && dripping; ++round) {
      for (auto& s : slow) s->send_all("X-a: b\r\n");
      std::this_thread::sleep_for(300ms);
    }
  });
  auto other = f.client();
  other->set_read_timeout(1, 0);
  auto res = other->Post("/v1/decisions", kCard, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  for (auto& s : slow) {
    std::string answer = s->read_all(4s);
    EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
    EXPECT_NE(answer.find(R"("code":"request_timeout")"), std::string::npos) << answer;
  }
  dripping = false;
  dripper.join();
}

/// Reported (issue 52, item 3): 120 connections declaring "Content-Length: 1000" and sending a
/// byte a second held all 81 workers, and decisions got 429 until --body-timeout. Bodies are read
/// by the poller now: with one general worker, 16 slow bodies (plain and chunked) leave decisions
/// answering, and each slow body still gets its 408 at the body deadline.
TEST(ConnectionPool, SlowBodySendersHoldNoWorker) {
  ServerConfig config = test_config();
  config.http_threads = 1;
  config.timeouts.body_s = 2;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(std::make_unique<RawSocket>(f.port));
    slow.back()->send_all(i % 2 == 0 ? "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                       "application/json\r\nContent-Length: 1000\r\n\r\n{"
                                     : "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                       "application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "1\r\n{\r\n");
  }
  std::atomic<bool> dripping{true};
  std::thread dripper([&] {
    for (int round = 0; round < 30 && dripping; ++round) {
      for (std::size_t i = 0; i < slow.size(); ++i)
        slow[i]->send_all(i % 2 == 0 ? " " : "1\r\n \r\n");
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);  // every slow body has begun
  for (int i = 0; i < 3; ++i) {
    auto other = f.client();
    other->set_read_timeout(1, 0);
    auto res = other->Post("/v1/decisions", kCard, "application/json");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200) << res->body;
  }
  for (auto& s : slow) {
    std::string answer = s->read_all(4s);
    EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  }
  dripping = false;
  dripper.join();
}

/// A whole body that arrives in pieces (plain and chunked) is decided as one sent at once, and a
/// chunked body over --max-body gets 413 from the poller while it arrives.
TEST(ConnectionPool, BodiesInPiecesAreDecidedAndOversizedChunkedOnesRefused) {
  ServerConfig config = test_config();
  config.max_body_bytes = 4096;
  config.body_buffer_bytes = 2 * 4096 + 64 * 1024;  // the least it may be
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  auto whole = post(f);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200);
  RawSocket plain(f.port);
  plain.send_all(
      "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(kCard.size()) + "\r\n\r\n" + kCard.substr(0, 10));
  std::this_thread::sleep_for(100ms);
  plain.send_all(kCard.substr(10));
  const std::string a = plain.read_until("\"output_tokens\":0}}", 3s);
  EXPECT_EQ(a.rfind("HTTP/1.1 200", 0), 0u) << a;
  EXPECT_NE(a.find(whole->body), std::string::npos) << a;
  RawSocket chunked(f.port);
  chunked.send_all(
      "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n");
  for (std::size_t at = 0; at < kCard.size(); at += 7) {
    const std::string piece = kCard.substr(at, 7);
    char size[16];
    std::snprintf(size, sizeof size, "%zx;ext=1\r\n", piece.size());
    chunked.send_all(size + piece + "\r\n");
    std::this_thread::sleep_for(5ms);
  }
  chunked.send_all("0\r\nX-Trailer: t\r\n\r\n");
  const std::string b = chunked.read_until("\"output_tokens\":0}}", 3s);
  EXPECT_EQ(b.rfind("HTTP/1.1 200", 0), 0u) << b;
  EXPECT_NE(b.find(whole->body), std::string::npos) << b;
  RawSocket huge(f.port);
  huge.send_all(
      "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 8; ++i) huge.send_all("400\r\n" + std::string(1024, ' ') + "\r\n");
  const std::string c = huge.read_all(3s);
  EXPECT_EQ(c.rfind("HTTP/1.1 413", 0), 0u) << c;
  EXPECT_NE(c.find("over the limit of 4096 bytes (--max-body)"), std::string::npos) << c;
}

/// A keep-alive client that, after its answer, drips its next request a byte at a time: the one
/// general worker is not held by it (the next request's headers are read by the poller).
TEST(ConnectionPool, ANextRequestDrippedAfterAnAnswerHoldsNoWorker) {
  ServerConfig config = test_config();
  config.http_threads = 1;
  config.timeouts.header_s = 3;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  const std::string request =
      "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(kCard.size()) + "\r\n\r\n" + kCard;
  RawSocket slow(f.port);
  slow.send_all(request);
  ASSERT_NE(slow.read_until("\"usage\"", 5s).find("HTTP/1.1 200"), std::string::npos);
  std::atomic<bool> stop{false};
  std::thread dripper([&] {
    for (char byte : request) {
      if (stop || !slow.send_all(std::string(1, byte))) return;
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);  // a few bytes are in
  auto other = f.client();
  other->set_read_timeout(2, 0);  // a held worker would keep it waiting for the 3 s deadline
  auto res = other->Post("/v1/decisions", kCard, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  stop = true;
  dripper.join();
}

/// A stopping server closes parked idle connections at once instead of waiting out their
/// keep-alive timeout.
TEST(ConnectionPool, StoppingClosesIdleConnectionsAtOnce) {
  ServerConfig config = test_config();
  config.timeouts.keep_alive_s = 30;
  config.timeouts.header_s = 30;
  ServerFixture f(config);
  ASSERT_TRUE(f.wait_ready());
  RawSocket fresh(f.port);  // connected, nothing sent
  RawSocket used(f.port);   // one request answered, then idle
  used.send_all("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_NE(used.read_until("\r\n\r\n", 2s).find("200 OK"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  f.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "idle connections were waited for";
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(fresh.read_all(5s), "");
  EXPECT_EQ(used.read_all(5s), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 1s) << "still open after the server stopped";
}

}  // namespace
}  // namespace clef::server
