// `clef serve`'s life as a process: the signal/drain path over the fake decider
// (clef_fake_server), run as a child process.

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <sstream>

#include "child_process.hpp"
#include "json/parse.hpp"
#include "temp_dir.hpp"

namespace clef::server {
namespace {

using testing::ChildProcess;
using testing::port_from_banner;
using testing::TempDir;
using namespace std::chrono_literals;

std::unique_ptr<httplib::Client> client(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_connection_timeout(2, 0);
  c->set_read_timeout(20, 0);
  c->set_tcp_nodelay(true);
  return c;
}

bool wait_healthy(int port, std::chrono::seconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    auto res = client(port)->Get("/health");
    if (res && res->status == 200) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

/// One /metrics snapshot (empty when the server does not answer).
std::string metrics_text(int port) {
  auto res = client(port)->Get("/metrics");
  return res ? res->body : std::string();
}

/// The value of the sample `name` in a /metrics snapshot, or -1.
double sample(const std::string& text, const std::string& name) {
  auto pos = text.find("\n" + name + " ");
  return pos == std::string::npos ? -1 : std::stod(text.substr(pos + name.size() + 2));
}

/// Decision requests the queue has taken, from ONE snapshot: waiting + running + answered with
/// 200. (Separate /metrics reads race with decisions finishing in between.)
double accepted(const std::string& text) {
  return sample(text, "clef_queue_depth") + sample(text, "clef_decisions_in_flight") +
         std::max(
             0.0,
             sample(text, R"(clef_http_requests_total{endpoint="/v1/decisions",status="200"})"));
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string request_body(int i) {
  return R"({"state":"ticket )" + std::to_string(i) +
         R"(","questions":{"outage":{"type":"noul"}}})";
}

TEST(ServeProcess, SigtermDuringLoadAnswersEveryAcceptedRequestAndExitsZero) {
  TempDir tmp;
  ChildProcess child({CLEF_FAKE_SERVER, "--delay-ms", "300", "--queue-size", "16"}, {},
                     (tmp.path() / "stderr.log").string());
  ASSERT_TRUE(child.started());
  int port = port_from_banner(child.read_line(10s));
  ASSERT_GT(port, 0);
  ASSERT_TRUE(wait_healthy(port, 10s));

  // The answers each request gets alone, before the load.
  std::vector<std::string> alone;
  for (int i = 0; i < 6; ++i) {
    auto res = client(port)->Post("/v1/decisions", request_body(i), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    alone.push_back(res->body);
  }

  std::vector<std::future<httplib::Result>> load;
  for (int i = 0; i < 6; ++i) {
    load.push_back(std::async(std::launch::async, [port, i] {
      return client(port)->Post("/v1/decisions", request_body(i), "application/json");
    }));
  }
  // SIGTERM once all six are accepted (answered or queued) and several still wait.
  // A decision that finishes between the counters' updates can make one snapshot read 11: wait
  // for a snapshot that shows all 12 with at least two still queued.
  auto until = std::chrono::steady_clock::now() + 5s;
  std::string snapshot = metrics_text(port);
  while ((accepted(snapshot) < 12 || sample(snapshot, "clef_queue_depth") < 2) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
    snapshot = metrics_text(port);
  }
  ASSERT_EQ(accepted(snapshot), 12) << "6 alone + 6 under load\n" << snapshot;
  ASSERT_GE(sample(snapshot, "clef_queue_depth"), 2)
      << "SIGTERM must arrive while decisions are queued";
  child.send_signal(SIGTERM);

  // New requests are refused (503) while the queue drains, or find nobody listening after.
  std::this_thread::sleep_for(50ms);
  auto late = client(port)->Post("/v1/decisions", request_body(99), "application/json");
  if (late) {
    EXPECT_EQ(late->status, 503);
    EXPECT_NE(late->body.find("shutting_down"), std::string::npos);
  }

  for (int i = 0; i < 6; ++i) {
    auto res = load[static_cast<std::size_t>(i)].get();
    ASSERT_TRUE(res) << "request " << i << " lost: " << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body, alone[static_cast<std::size_t>(i)]);
  }
  auto code = child.wait_exit(15s);
  ASSERT_TRUE(code.has_value()) << "the server did not exit after draining";
  EXPECT_EQ(*code, 0);
  std::string log = slurp(tmp.path() / "stderr.log");
  EXPECT_NE(log.find("SIGTERM received"), std::string::npos) << log;
  EXPECT_NE(log.find("draining"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped"), std::string::npos) << log;
}

TEST(ServeProcess, SigintIdleExitsZeroAndBusyPortExitsTwo) {
  TempDir tmp;
  ChildProcess first({CLEF_FAKE_SERVER}, {}, (tmp.path() / "first.log").string());
  int port = port_from_banner(first.read_line(10s));
  ASSERT_GT(port, 0);
  ASSERT_TRUE(wait_healthy(port, 10s));

  ChildProcess second({CLEF_FAKE_SERVER, "--port", std::to_string(port)}, {},
                      (tmp.path() / "second.log").string());
  auto second_code = second.wait_exit(10s);
  ASSERT_TRUE(second_code.has_value());
  EXPECT_EQ(*second_code, 2);  // a start refusal, as the others (issue 53; it was 1)
  EXPECT_NE(slurp(tmp.path() / "second.log").find("cannot listen"), std::string::npos);

  first.send_signal(SIGINT);
  auto code = first.wait_exit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

TEST(ServeProcess, SighupRereadsTheApiKeyFileWithoutDroppingTheServer) {
  TempDir tmp;
  const std::string keys = (tmp.path() / "keys").string();
  std::ofstream(keys) << "ops sk-before\n";
  ChildProcess child({CLEF_FAKE_SERVER, "--api-key-file", keys}, {}, (tmp.path() / "log").string());
  int port = port_from_banner(child.read_line(10s));
  ASSERT_GT(port, 0);
  ASSERT_TRUE(wait_healthy(port, 10s));  // /health needs no key
  auto c = client(port);
  auto models = [&c](const char* key) {
    auto res =
        c->Get("/v1/models", httplib::Headers{{"Authorization", std::string("Bearer ") + key}});
    return res ? res->status : -1;
  };
  EXPECT_EQ(models("sk-before"), 200);
  EXPECT_EQ(models("sk-after"), 401);

  std::ofstream(keys) << "ops sk-after\n";
  child.send_signal(SIGHUP);
  auto until = std::chrono::steady_clock::now() + 10s;
  while (models("sk-after") != 200 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(models("sk-after"), 200);
  EXPECT_EQ(models("sk-before"), 401);
  EXPECT_FALSE(child.wait_exit(100ms).has_value()) << "SIGHUP ended the server";

  child.send_signal(SIGTERM);
  auto code = child.wait_exit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  const std::string log = slurp(tmp.path() / "log");
  EXPECT_NE(log.find("API keys accepted now: ops"), std::string::npos) << log;
  EXPECT_EQ(log.find("sk-"), std::string::npos) << log;  // keys are never logged
}

TEST(ServeProcess, SighupWithoutAKeyFileDoesNotEndTheServer) {
  // Reported: SIGHUP to a server without --api-key-file ended it at once (exit 129, no drain).
  TempDir tmp;
  ChildProcess child({CLEF_FAKE_SERVER}, {}, (tmp.path() / "log").string());
  int port = port_from_banner(child.read_line(10s));
  ASSERT_GT(port, 0);
  ASSERT_TRUE(wait_healthy(port, 10s));
  child.send_signal(SIGHUP);
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(child.wait_exit(100ms).has_value()) << "SIGHUP ended the server";
  EXPECT_TRUE(wait_healthy(port, 5s));
  child.send_signal(SIGTERM);
  auto code = child.wait_exit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  EXPECT_NE(slurp(tmp.path() / "log").find("SIGHUP: nothing to re-read"), std::string::npos);
}

TEST(ServeProcess, AnIpv6HostIsPrintedInBrackets) {
  TempDir tmp;
  ChildProcess child({CLEF_FAKE_SERVER, "--host", "::1"}, {}, (tmp.path() / "log").string());
  const std::string banner = child.read_line(10s);
  if (banner.empty() && child.wait_exit(5s).has_value()) {
    GTEST_SKIP() << "no IPv6 loopback here: " << slurp(tmp.path() / "log");
  }
  EXPECT_NE(banner.find("listening on http://[::1]:"), std::string::npos) << banner;
  child.send_signal(SIGTERM);
  EXPECT_TRUE(child.wait_exit(10s).has_value());
}

/// A load that cannot be interrupted (the fake's takes a minute) does not hold up a SIGTERM: the
/// process exits 0 about 2 s after it.
TEST(ServeProcess, SigtermWhileTheModelLoadsExitsZeroAtOnce) {
  TempDir tmp;
  ChildProcess child({CLEF_FAKE_SERVER, "--load-ms", "60000"}, {}, (tmp.path() / "log").string());
  int port = port_from_banner(child.read_line(10s));
  ASSERT_GT(port, 0);
  auto health = client(port)->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(health->body, R"({"status":"loading"})");
  child.send_signal(SIGTERM);
  auto code = child.wait_exit(8s);
  ASSERT_TRUE(code.has_value()) << "still waiting for the load";
  EXPECT_EQ(*code, 0);
  const std::string log = slurp(tmp.path() / "log");
  EXPECT_NE(log.find("still loading: exiting without waiting"), std::string::npos) << log;
}

}  // namespace
}  // namespace clef::server
