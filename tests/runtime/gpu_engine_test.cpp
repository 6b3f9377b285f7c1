// The engine on a GPU (ctest label `gpu`; every test skips without a GPU device, i.e. on a CPU
// build or a machine without an NVIDIA GPU): answers as the CPU's where the CPU's choice is clear,
// a repeated request bit for bit, a state-cache hit with the cold bytes, a gone client cancelling
// a long prefill promptly, and a configuration too large for the GPU refused, not a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <iostream>
#include <string>
#include <thread>

#include "device/device.hpp"
#include "json/parse.hpp"
#include "runtime/engine.hpp"
#include "support/ticket_text.hpp"
#include "support/tiny_engine_config.hpp"
#include "util/error.hpp"

namespace {

namespace rt = clef::runtime;
using clef::json::Value;

bool no_gpu() {
  return clef::device::resolve("auto", -1).gpu == nullptr;
}

#define SKIP_WITHOUT_GPU() \
  if (no_gpu()) GTEST_SKIP() << "no GPU device (a CLEF_CUDA=ON build on a machine with a GPU)"

rt::EngineConfig on(const char* device, std::int64_t cache_mb = 0) {
  rt::EngineConfig c = clef::test::tiny_engine_config();
  c.backbone.device = device;
  c.backbone.gpu_layers = -1;
  c.state_cache_mb = cache_mb;
  return c;
}

Value request(int state_words, const char* questions) {
  return clef::json::parse(R"({"state": ")" + clef::test::ticket_words(state_words) +
                           R"(", "questions": )" + questions + "}");
}

const char* kQuestions = R"({
    "department": {"type": "choice", "instructions": "Which team should handle this ticket?",
      "criteria": {"engineering": "Software and outages", "sales": "Pricing", "support": "Help"}},
    "urgency": {"type": "score", "criteria": ["Not urgent", "Low", "Medium", "High", "Critical"]},
    "outage": {"type": "noul", "instructions": "Is a service outage reported?"}})";
const char* kOtherQuestions = R"({
    "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}})";

std::vector<float> softmax(const std::vector<float>& logits) {
  const float m = *std::max_element(logits.begin(), logits.end());
  std::vector<float> p;
  float sum = 0;
  for (float l : logits) sum += p.emplace_back(std::exp(l - m));
  for (float& v : p) v /= sum;
  return p;
}

TEST(GpuEngine, AnswersAreTheCpusWhereTheCpusChoiceIsClear) {
  SKIP_WITHOUT_GPU();
  auto gpu = rt::make_engine(on("auto"));
  auto cpu = rt::make_engine(on("cpu"));
  EXPECT_NE(gpu->placement().find("backbone"), std::string::npos) << gpu->placement();
  std::cout << "[gpu] " << gpu->placement() << "\n";
  double max_dp = 0;
  int compared = 0;
  for (int n : {5, 60, 300, 1500}) {
    const Value body = request(n, kQuestions);
    const rt::Decision g = gpu->decide(body);
    const rt::Decision c = cpu->decide(body);
    ASSERT_EQ(g.logits.size(), c.logits.size());
    for (std::size_t q = 0; q < c.logits.size(); ++q) {
      const auto pc = softmax(c.logits[q]);
      const auto pg = softmax(g.logits[q]);
      for (std::size_t o = 0; o < pc.size(); ++o) {
        max_dp = std::max(max_dp, static_cast<double>(std::fabs(pc[o] - pg[o])));
      }
      std::vector<float> sorted = pc;
      std::sort(sorted.rbegin(), sorted.rend());
      if (sorted[0] - sorted[1] <= 0.02f) continue;
      ++compared;
      EXPECT_EQ(std::max_element(pg.begin(), pg.end()) - pg.begin(),
                std::max_element(pc.begin(), pc.end()) - pc.begin())
          << n << " words, question " << q;
    }
  }
  std::cout << "[gpu] max |p_gpu - p_cpu| = " << max_dp << " over " << compared
            << " clear questions\n";
  EXPECT_LT(max_dp, 0.05);
}

TEST(GpuEngine, ARepeatedRequestIsBitIdentical) {
  SKIP_WITHOUT_GPU();
  auto gpu = rt::make_engine(on("auto"));
  for (int n : {20, 700}) {
    const Value body = request(n, kQuestions);
    const rt::Decision first = gpu->decide(body);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(gpu->decide(body).body, first.body) << n << " words";
  }
}

TEST(GpuEngine, AStateCacheHitGivesTheColdBytes) {
  SKIP_WITHOUT_GPU();
  auto cached = rt::make_engine(on("auto", 64));
  auto cold = rt::make_engine(on("auto", 0));
  for (int n : {40, 400, 1200}) {
    EXPECT_EQ(cached->decide(request(n, kQuestions)).body,
              cold->decide(request(n, kQuestions)).body);
    const rt::Decision warm = cached->decide(request(n, kOtherQuestions));
    EXPECT_GT(warm.cached_tokens, 0) << n << " words";
    EXPECT_EQ(warm.body, cold->decide(request(n, kOtherQuestions)).body) << n << " words";
  }
}

TEST(GpuEngine, AGoneClientCancelsALongPrefillPromptly) {
  SKIP_WITHOUT_GPU();
  rt::EngineConfig c = on("auto");
  c.backbone.context_size = 32768;
  c.backbone.chunk_tokens = 256;  // many batches: the abort callback runs between graph nodes
  auto gpu = rt::make_engine(c);
  const Value body = request(20000, kQuestions);
  rt::PreparedRequest prepared = gpu->prepare(body);
  const auto t0 = std::chrono::steady_clock::now();
  const rt::Decision whole = gpu->decide(prepared);
  const double whole_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  rt::PreparedRequest again = gpu->prepare(body);
  std::thread canceller([cancel = again.cancellation, whole_ms]() mutable {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(whole_ms / 4));
    cancel.cancel();
  });
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_THROW(gpu->decide(again), clef::DecisionCancelled);
  const double cancelled_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  canceller.join();
  std::cout << "[gpu] whole prefill " << whole_ms << " ms, cancelled after " << cancelled_ms
            << " ms\n";
  EXPECT_LT(cancelled_ms, whole_ms * 0.75);
  // The engine is fine afterwards.
  EXPECT_EQ(gpu->decide(body).body, whole.body);
}

TEST(GpuEngine, AConfigurationTooLargeForTheGpuIsRefused) {
  SKIP_WITHOUT_GPU();
  // The small model (4 heads) with 262,144 tokens of context and 65,536-token batches: the
  // attention scores of one batch alone (n_kv x n_ubatch x heads x 4 bytes) are 256 GiB.
  clef::test::TempDir dir("clef-gpu-oom");
  clef::testmodel::MakeOptions made;
  made.dir = dir.path() / "small";
  made.preset = "small";
  const clef::testmodel::MadeModel small_model = clef::testmodel::make_test_model(made);
  rt::EngineConfig c = on("auto");
  c.backbone_path = small_model.backbone.string();
  c.head_path = small_model.head.string();
  c.head_config_path = small_model.head_config.string();
  c.mmproj_path = small_model.mmproj.string();
  c.backbone.context_size = 262144;
  c.backbone.chunk_tokens = 65536;
  try {
    auto engine = rt::make_engine(c);
    FAIL() << "an engine that cannot fit was made";
  } catch (const clef::Error& e) {
    std::cout << "[gpu] refused: " << e.what() << "\n";
    EXPECT_EQ(e.kind(), clef::ErrorKind::model_error);
  }
  // The GPU is usable again.
  auto small = rt::make_engine(on("auto"));
  EXPECT_FALSE(small->decide(request(10, kQuestions)).body.empty());
}

}  // namespace
