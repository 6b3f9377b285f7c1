// API keys end to end on 127.0.0.1 (the fake engine): which endpoints need a key, how a request
// presents one, the 401 answer, per-key metrics and log lines, and a reload while serving.

#include <gtest/gtest.h>

#include <fstream>

#include "json/parse.hpp"
#include "server_fixture.hpp"
#include "temp_dir.hpp"

namespace clef::server {
namespace {

using testing::metric_value;
using testing::ServerFixture;
using testing::TempDir;
using testing::test_config;

const char* kCard = R"({"state":"Production database is down",)"
                    R"("questions":{"outage":{"type":"noul"}}})";

ServerConfig keyed_config(const std::string& file = "") {
  ServerConfig config = test_config();
  config.api_keys = {"sk-flag-secret"};
  config.api_key_file = file;
  return config;
}

/// Asserts a 401 with WWW-Authenticate and the JSON error body naming `code`.
void expect_unauthorized(const httplib::Result& res, const std::string& code) {
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 401) << res->body;
  EXPECT_EQ(res->get_header_value("WWW-Authenticate").rfind("Bearer realm=\"clef\"", 0), 0u);
  EXPECT_EQ(res->get_header_value("WWW-Authenticate").find("invalid_token") != std::string::npos,
            code == "invalid_api_key");
  EXPECT_FALSE(res->get_header_value("X-Request-Id").empty());
  json::Value body = json::parse(res->body);
  ASSERT_NE(body.find("error"), nullptr) << res->body;
  EXPECT_EQ(body.find("error")->find("code")->as_string(), code);
  EXPECT_EQ(body.find("error")->find("type")->as_string(), "authentication_error");
  EXPECT_EQ(body.find("detail")->as_string(), body.find("error")->find("message")->as_string());
}

TEST(ServerApiKeys, EveryEndpointButHealthAndTheWebFilesNeedsAKey) {
  ServerFixture f(keyed_config());
  ASSERT_TRUE(f.wait_ready());
  auto c = f.client();
  expect_unauthorized(c->Post("/v1/decisions", kCard, "application/json"), "missing_api_key");
  expect_unauthorized(c->Post("/v1/systemone", kCard, "application/json"), "missing_api_key");
  expect_unauthorized(c->Get("/v1/models"), "missing_api_key");
  expect_unauthorized(c->Get("/metrics"), "missing_api_key");
  expect_unauthorized(c->Get("/no/such/path"), "missing_api_key");  // no hint which paths exist
  expect_unauthorized(
      c->Post("/v1/decisions", {{"Authorization", "Bearer sk-wrong"}}, kCard, "application/json"),
      "invalid_api_key");
  // Reported: another scheme alone was answered "missing key"; it now says what to send.
  auto basic =
      c->Get("/v1/models", httplib::Headers{{"Authorization", "Basic c2stZmxhZy1zZWNyZXQ="}});
  ASSERT_TRUE(basic);
  EXPECT_EQ(basic->status, 401);
  EXPECT_EQ(basic->get_header_value("WWW-Authenticate"), "Bearer realm=\"clef\"");
  EXPECT_NE(basic->body.find(R"("code":"invalid_api_key")"), std::string::npos) << basic->body;
  EXPECT_NE(basic->body.find("not of the Bearer scheme"), std::string::npos) << basic->body;
  // Reported: with two Authorization headers the first one won.
  auto twice = c->Get("/v1/models", httplib::Headers{{"Authorization", "Bearer sk-flag-secret"},
                                                     {"Authorization", "Bearer sk-other"}});
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->status, 400);
  EXPECT_NE(twice->body.find(R"("param":"Authorization")"), std::string::npos) << twice->body;
  EXPECT_EQ(c->Get("/health")->status, 200);
  EXPECT_EQ(c->Get("/openapi.json")->status, 200);
  EXPECT_EQ(c->Get("/")->status, 200);  // the playground page asks for the key itself
}

TEST(ServerApiKeys, BearerAndXApiKeyAreBothAccepted) {
  ServerFixture f(keyed_config());
  ASSERT_TRUE(f.wait_ready());
  auto c = f.client();
  auto bearer = c->Post("/v1/decisions", {{"Authorization", "Bearer sk-flag-secret"}}, kCard,
                        "application/json");
  ASSERT_TRUE(bearer);
  EXPECT_EQ(bearer->status, 200) << bearer->body;
  auto header =
      c->Post("/v1/systemone", {{"X-API-Key", "sk-flag-secret"}}, kCard, "application/json");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 200) << header->body;
  EXPECT_EQ(header->body, bearer->body);
  EXPECT_EQ(
      c->Get("/v1/models", httplib::Headers{{"Authorization", "bearer sk-flag-secret"}})->status,
      200);
  // A bad request with a good key is the usual 400, not a 401.
  auto bad = c->Post("/v1/decisions", {{"X-API-Key", "sk-flag-secret"}}, "{}", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
}

TEST(ServerApiKeys, MetricsAndTheLogNameTheKeyNeverShowIt) {
  TempDir dir;
  const std::string file = (dir.path() / "keys").string();
  std::ofstream(file) << "# two teams\nops sk-ops-secret\nci sk-ci-secret\n";
  ServerFixture f(keyed_config(file));
  ASSERT_TRUE(f.wait_ready());
  auto c = f.client();
  const httplib::Headers ops{{"Authorization", "Bearer sk-ops-secret"}};
  auto first = c->Post("/v1/decisions", ops, kCard, "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  const int tokens =
      std::stoi(json::parse(first->body).find("usage")->find("input_tokens")->integer_digits());
  ASSERT_EQ(c->Post("/v1/decisions", ops, kCard, "application/json")->status, 200);
  ASSERT_EQ(c->Post("/v1/decisions", ops, "{}", "application/json")->status, 400);
  ASSERT_EQ(
      c->Post("/v1/decisions", {{"X-API-Key", "sk-ci-secret"}}, "[", "application/json")->status,
      400);
  expect_unauthorized(c->Get("/metrics", httplib::Headers{{"X-API-Key", "sk-nope"}}),
                      "invalid_api_key");

  auto metrics = c->Get("/metrics", ops);
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  const std::string& text = metrics->body;
  EXPECT_EQ(metric_value(text, R"(clef_api_key_decisions_total{key="ops"})"), 2);
  EXPECT_EQ(metric_value(text, R"(clef_api_key_input_tokens_total{key="ops"})"), 2 * tokens);
  EXPECT_EQ(metric_value(text, R"(clef_api_key_refusals_total{key="ops"})"), 1);
  EXPECT_EQ(metric_value(text, R"(clef_api_key_decisions_total{key="ci"})"), 0);
  EXPECT_EQ(metric_value(text, R"(clef_api_key_refusals_total{key="ci"})"), 1);
  EXPECT_EQ(metric_value(text, R"(clef_http_requests_total{endpoint="/metrics",status="401"})"), 1);

  f.stop();
  const std::string log = f.log_text();
  EXPECT_NE(log.find("key=ops"), std::string::npos) << log;
  EXPECT_NE(log.find("key=ci"), std::string::npos) << log;
  EXPECT_EQ(log.find("secret"), std::string::npos) << log;  // no key's text
  EXPECT_EQ(log.find("sk-nope"), std::string::npos) << log;
}

TEST(ServerApiKeys, AReloadTakesTheNewFileAndKeepsTheOldKeysOnAnError) {
  TempDir dir;
  const std::string file = (dir.path() / "keys").string();
  std::ofstream(file) << "ops sk-old\n";
  ServerFixture f(keyed_config(file));
  ASSERT_TRUE(f.wait_ready());
  auto c = f.client();  // one keep-alive connection across the reloads
  auto with = [](const char* key) { return httplib::Headers{{"X-API-Key", key}}; };
  EXPECT_EQ(c->Get("/v1/models", with("sk-old"))->status, 200);

  std::ofstream(file) << "ops sk-new\n";
  f.server->reload_api_keys();
  EXPECT_EQ(c->Get("/v1/models", with("sk-old"))->status, 401);
  EXPECT_EQ(c->Get("/v1/models", with("sk-new"))->status, 200);
  EXPECT_EQ(c->Get("/v1/models", with("sk-flag-secret"))->status, 200);

  std::ofstream(file) << "ops sk-a\nops sk-b\n";  // a name twice: refused, the old keys stay
  f.server->reload_api_keys();
  EXPECT_EQ(c->Get("/v1/models", with("sk-new"))->status, 200);
  EXPECT_EQ(c->Get("/v1/models", with("sk-a"))->status, 401);
  f.stop();
  EXPECT_NE(f.log_text().find("the API keys stay as they were"), std::string::npos);
}

TEST(ServerApiKeys, ABadKeyFileIsRefusedBeforeServing) {
  TempDir dir;
  const std::string file = (dir.path() / "keys").string();
  std::ofstream(file) << "ops sk 1\n";
  try {
    ServerFixture f(keyed_config(file));
    FAIL() << "served with a malformed key file";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "api-key-file");
    EXPECT_NE(std::string(e.what()).find(file + ": line 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clef::server
