// The built `clef serve --demo` over the real engine and the random-weight `tiny` test model,
// as a child process: the model card's example, agreement with `clef ask`, concurrency, errors,
// and SIGTERM.

#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <fstream>
#include <future>

#include "child_process.hpp"
#include "json/parse.hpp"
#include "temp_dir.hpp"

namespace clef::server {
namespace {

using testing::ChildProcess;
using testing::port_from_banner;
using testing::TempDir;
using namespace std::chrono_literals;

const std::string kClef = CLEF_BINARY_DIR "/clef";

// The model card's example: department (choice), urgency (score, 4 levels), outage (noul).
const std::string kCard =
    R"({"state":"Production database is down, customers cannot log in",)"
    R"("questions":{"department":{"type":"choice","criteria":{"engineering":)"
    R"("Backend, infrastructure and reliability","sales":"Pricing and contracts",)"
    R"("support":"Customer help"}},"urgency":{"type":"score","criteria":["low","medium",)"
    R"("high","critical"]},"outage":{"type":"noul"}}})";

std::unique_ptr<httplib::Client> client(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_connection_timeout(2, 0);
  c->set_read_timeout(60, 0);
  c->set_tcp_nodelay(true);
  return c;
}

/// `clef serve --demo --port 0 ARGS...` with its own model cache; ready when constructed.
class DemoServer {
 public:
  explicit DemoServer(const TempDir& tmp, std::vector<std::string> args = {})
      : child_(argv(std::move(args)), {"XDG_CACHE_HOME=" + tmp.path().string()},
               (tmp.path() / "serve.log").string()),
        log_path_(tmp.path() / "serve.log"),
        model_dir_(tmp.path() / "clef" / "demo-tiny" / "tiny-seed0") {
    port_ = port_from_banner(child_.read_line(120s));
    if (port_ <= 0) return;
    auto until = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < until && child_.running()) {
      auto res = client(port_)->Get("/health");
      if (res && res->status == 200) {
        ready_ = true;
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  bool ready() const { return ready_; }
  int port() const { return port_; }
  const std::filesystem::path& model_dir() const { return model_dir_; }
  ChildProcess& process() { return child_; }
  std::string log() const {
    std::ifstream in(log_path_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  static std::vector<std::string> argv(std::vector<std::string> args) {
    std::vector<std::string> v{kClef, "serve", "--demo", "--port", "0", "--threads", "1"};
    v.insert(v.end(), args.begin(), args.end());
    return v;
  }

  ChildProcess child_;
  std::filesystem::path log_path_;
  std::filesystem::path model_dir_;
  int port_ = -1;
  bool ready_ = false;
};

httplib::Result post(int port, const std::string& body) {
  return client(port)->Post("/v1/decisions", body, "application/json");
}

double number(const json::Value& v) {
  return v.is_integer() ? std::stod(v.integer_digits()) : v.as_double();
}

TEST(ServeBinary, CardExampleOverTheTinyModelMatchesClefAskAndSurvivesConcurrency) {
  if (!std::filesystem::exists(kClef)) GTEST_SKIP() << "no clef binary at " << kClef;
  TempDir tmp;
  DemoServer server(tmp);
  ASSERT_TRUE(server.ready()) << server.log();

  auto res = post(server.port(), kCard);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json::Value answer = json::parse(res->body);
  EXPECT_EQ(answer.find("model")->as_string(), "clef-flash");
  const json::Value& answers = *answer.find("answers");
  ASSERT_EQ(answers.members().size(), 3u);
  EXPECT_EQ(answers.members()[0].first, "department");
  EXPECT_EQ(answers.members()[1].first, "urgency");
  EXPECT_EQ(answers.members()[2].first, "outage");

  const json::Value& department = *answers.find("department");
  EXPECT_EQ(department.find("type")->as_string(), "choice");
  const auto& probabilities = department.find("probabilities")->members();
  ASSERT_EQ(probabilities.size(), 3u);
  EXPECT_EQ(probabilities[0].first, "engineering");
  EXPECT_EQ(probabilities[1].first, "sales");
  EXPECT_EQ(probabilities[2].first, "support");
  double sum = 0;
  double best = -1;
  std::string best_id;
  for (const auto& [id, p] : probabilities) {
    sum += number(p);
    if (number(p) > best) {
      best = number(p);
      best_id = id;
    }
  }
  EXPECT_NEAR(sum, 1.0, 2e-4);
  EXPECT_EQ(department.find("choice")->as_string(), best_id);
  EXPECT_DOUBLE_EQ(number(*department.find("confidence")), best);

  const json::Value& urgency = *answers.find("urgency");
  EXPECT_EQ(urgency.find("type")->as_string(), "score");
  ASSERT_EQ(urgency.find("legend")->members().size(), 4u);
  EXPECT_EQ(urgency.find("legend")->find("3")->as_string(), "critical");
  double expected_score = 0;
  for (const auto& [level, p] : urgency.find("probabilities")->members()) {
    expected_score += std::stoi(level) * number(p);
  }
  EXPECT_NEAR(number(*urgency.find("score")), expected_score, 5e-4);

  const json::Value& outage = *answers.find("outage");
  EXPECT_EQ(outage.find("type")->as_string(), "noul");
  EXPECT_GE(number(*outage.find("noul")), 0.0);
  EXPECT_LE(number(*outage.find("noul")), 1.0);
  EXPECT_GT(std::stoi(answer.find("usage")->find("input_tokens")->integer_digits()), 50);

  // The server answers exactly what `clef ask` prints for the same request and model.
  std::filesystem::path request_file = tmp.path() / "card.json";
  std::ofstream(request_file) << kCard;
  ChildProcess ask({kClef, "ask", "--model-dir", server.model_dir().string(), "--threads", "1",
                    "-r", request_file.string()},
                   {}, (tmp.path() / "ask.log").string());
  EXPECT_EQ(ask.read_line(120s), res->body);
  EXPECT_EQ(ask.wait_exit(60s).value_or(-1), 0);

  // 16 concurrent requests: each equals the same request answered alone, byte for byte.
  std::vector<std::string> bodies;
  std::vector<std::string> alone;
  for (int i = 0; i < 16; ++i) {
    bodies.push_back(R"({"state":{"ticket":)" + std::to_string(i) +
                     R"(,"text":"Production database is down, customers cannot log in"},)"
                     R"("questions":{"outage":{"type":"noul"},"urgency":{"type":"score",)"
                     R"("criteria":["low","medium","high"]}}})");
    auto one = post(server.port(), bodies.back());
    ASSERT_TRUE(one);
    ASSERT_EQ(one->status, 200);
    alone.push_back(one->body);
  }
  std::vector<std::future<httplib::Result>> together;
  for (int i = 0; i < 16; ++i) {
    together.push_back(std::async(std::launch::async, [&, i] {
      return post(server.port(), bodies[static_cast<std::size_t>(i)]);
    }));
  }
  for (int i = 0; i < 16; ++i) {
    auto r = together[static_cast<std::size_t>(i)].get();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, alone[static_cast<std::size_t>(i)]) << i;
  }

  server.process().send_signal(SIGTERM);
  EXPECT_EQ(server.process().wait_exit(30s).value_or(-1), 0) << server.log();
}

TEST(ServeBinary, AliasRefuseTruncationAndValidationErrors) {
  if (!std::filesystem::exists(kClef)) GTEST_SKIP() << "no clef binary at " << kClef;
  TempDir tmp;
  DemoServer server(tmp, {"--alias", "tiny-demo", "--truncation", "refuse", "--context-size", "512",
                          "--log-format", "json"});
  ASSERT_TRUE(server.ready()) << server.log();

  auto models = client(server.port())->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->body, R"({"object":"list","data":[{"id":"tiny-demo","object":"model",)"
                          R"("owned_by":"clef","context_size":512}]})");

  auto ok = post(server.port(), kCard);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(json::parse(ok->body).find("model")->as_string(), "tiny-demo");

  std::string long_state(6000, 'x');
  for (std::size_t i = 5; i < long_state.size(); i += 6) long_state[i] = ' ';
  auto refused =
      post(server.port(), R"({"state":")" + long_state + R"(","questions":{"q":{"type":"noul"}}})");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 413) << refused->body;
  EXPECT_EQ(json::parse(refused->body).find("error")->find("code")->as_string(),
            "context_length_exceeded");

  auto bad = post(server.port(),
                  R"({"state":"x","questions":{"urgency":{"type":"score","criteria":[]}}})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  json::Value error = *json::parse(bad->body).find("error");
  EXPECT_EQ(error.find("type")->as_string(), "invalid_request_error");
  EXPECT_EQ(error.find("param")->as_string(), "questions.urgency.criteria") << bad->body;

  server.process().send_signal(SIGTERM);
  EXPECT_EQ(server.process().wait_exit(30s).value_or(-1), 0);
  // Every access line is a JSON object naming the request id.
  std::istringstream lines(server.log());
  std::string line;
  int access = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("{", 0) != 0) continue;  // llama.cpp's own log lines
    json::Value v = json::parse(line);
    if (v.find("event")->as_string() == "access") {
      ++access;
      EXPECT_FALSE(v.find("id")->as_string().empty());
    }
  }
  EXPECT_GE(access, 4);
}

}  // namespace
}  // namespace clef::server
