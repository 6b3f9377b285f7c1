// The engine on a device (ctest label `gpu`): a Vulkan device (Mesa's lavapipe on a machine without
// a GPU: the ctest environment sets CLEF_VK_ALLOW_CPU_DEVICE=1 so that `auto` may take it) or a
// CUDA GPU. Answers as the CPU's within the parity bar, a repeated request bit for bit, a
// state-cache hit with the cold bytes, continuous batching with the bytes of solo device runs,
// images through the tower on the device, a gone client cancelling a long prefill promptly, a
// configuration too large for the device refused, and an image too large for the device's memory
// refused with the engine fine afterwards. Each test skips only on a machine with no Vulkan device
// at all (or a build without the Vulkan backend); where there is one, not finding it fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <iostream>
#include <string>
#include <thread>

#include "artifact/open_model.hpp"
#include "device/device.hpp"
#include "eval/fixture.hpp"
#include "eval/verify.hpp"
#include "json/parse.hpp"
#include "runtime/engine/engine_memory.hpp"
#include "runtime/make_engine.hpp"
#include "support/batched_decisions.hpp"
#include "support/device_parity.hpp"
#include "support/device_under_test.hpp"
#include "support/ticket_text.hpp"
#include "support/tiny_engine_config.hpp"
#include "testmodel/make_test_model.hpp"
#include "util/error.hpp"

namespace {

namespace rt = clef::runtime;
using clef::json::Value;

/// On a software device (lavapipe) every row of ggml-vulkan's RMS_NORM shader is one 512-wide
/// workgroup that llvmpipe runs with 10 barriers, about 1.3 ms (docs/performance.md), so a token
/// of the tiny model costs ~70 ms there: the tests take shorter records on it and their full size
/// on a real GPU.
using clef::test::software_device;
int sized(int on_a_gpu, int on_lavapipe) {
  return software_device() ? on_lavapipe : on_a_gpu;
}

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
const char* kThirdQuestions = R"({"angry": {"type": "noul"}})";

void print(const char* what, const clef::test::Parity& p) {
  std::cout << "[device parity] " << what << ": " << p.questions << " questions, " << p.options
            << " options: max |dp| " << p.max_dp << ", mean |dp| " << p.mean_dp() << ", argmax "
            << (p.clear - p.argmax_differs) << "/" << p.clear << " equal above margin 0.02\n";
}

void expect_within_bar(const clef::test::Parity& p) {
  EXPECT_GT(p.questions, 0u);
  EXPECT_EQ(p.argmax_differs, 0u);
  EXPECT_LE(p.max_dp, 0.01);
  EXPECT_LE(p.mean_dp(), 0.002);
}

TEST(GpuEngine, AnswersAreTheCpusWhereTheCpusChoiceIsClear) {
  SKIP_WITHOUT_DEVICE();
  auto gpu = rt::make_engine(on("auto"));
  auto cpu = rt::make_engine(on("cpu"));
  EXPECT_NE(gpu.served().placement.find("backbone"), std::string::npos) << gpu.served().placement;
  std::cout << "[gpu] " << gpu.served().placement << "\n";
  clef::test::Parity parity;
  for (int n : {5, 60, sized(300, 0), sized(1500, 0)}) {
    if (n == 0) continue;
    const Value body = request(n, kQuestions);
    const rt::Decision g = gpu.decide(body);
    const rt::Decision c = cpu.decide(body);
    ASSERT_EQ(g.logits.size(), c.logits.size());
    parity.add(c.logits, g.logits);
  }
  print("tiny model, ticket states", parity);
  expect_within_bar(parity);
}

TEST(GpuEngine, ARepeatedRequestIsBitIdentical) {
  SKIP_WITHOUT_DEVICE();
  auto gpu = rt::make_engine(on("auto"));
  for (int n : {20, sized(700, 0)}) {
    if (n == 0) continue;
    const Value body = request(n, !software_device() ? kQuestions : kOtherQuestions);
    const rt::Decision first = gpu.decide(body);
    for (int i = 0; i < sized(3, 1); ++i) {
      EXPECT_EQ(gpu.decide(body).body, first.body) << n << " words";
    }
  }
}

TEST(GpuEngine, AStateCacheHitGivesTheColdBytes) {
  SKIP_WITHOUT_DEVICE();
  auto cached = rt::make_engine(on("auto", 64));
  auto cold = rt::make_engine(on("auto", 0));
  const char* first = !software_device() ? kQuestions : kOtherQuestions;
  const char* then = !software_device() ? kOtherQuestions : kThirdQuestions;
  for (int n : {40, sized(400, 0), sized(1200, 0)}) {
    if (n == 0) continue;
    EXPECT_EQ(cached.decide(request(n, first)).body, cold.decide(request(n, first)).body);
    const rt::Decision warm = cached.decide(request(n, then));
    EXPECT_GT(warm.cached_tokens, 0) << n << " words";
    EXPECT_EQ(warm.body, cold.decide(request(n, then)).body) << n << " words";
  }
}

TEST(GpuEngine, AGoneClientCancelsALongPrefillPromptly) {
  SKIP_WITHOUT_DEVICE();
  rt::EngineConfig c = on("auto");
  c.backbone.context_size = sized(32768, 4096);
  // many batches: the abort callback runs between graph nodes
  c.backbone.chunk_tokens = sized(256, 64);
  auto gpu = rt::make_engine(c);
  const Value body = request(sized(20000, 300), kOtherQuestions);
  rt::PreparedRequest prepared = gpu.prepare(body);
  const auto t0 = std::chrono::steady_clock::now();
  const rt::Decision whole = gpu.decide(prepared);
  const double whole_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  rt::PreparedRequest again = gpu.prepare(body);
  std::thread canceller([cancel = again.cancellation, whole_ms]() mutable {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(whole_ms / 4));
    cancel.cancel();
  });
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_THROW(gpu.decide(again), clef::DecisionCancelled);
  const double cancelled_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  canceller.join();
  std::cout << "[gpu] whole prefill " << whole_ms << " ms, cancelled after " << cancelled_ms
            << " ms\n";
  EXPECT_LT(cancelled_ms, whole_ms * 0.75);
  // The engine is fine afterwards.
  if (software_device()) {
    const Value small = request(5, kThirdQuestions);
    auto fresh = rt::make_engine(on("auto"));
    EXPECT_EQ(gpu.decide(small).body, fresh.decide(small).body);
  } else {
    EXPECT_EQ(gpu.decide(body).body, whole.body);
  }
}

TEST(GpuEngine, AConfigurationTooLargeForTheGpuIsRefused) {
  SKIP_WITHOUT_DEVICE();
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
    // Refused before ggml would abort on its scheduler's metadata (chunk_tokens), or by the
    // device's memory (a model error).
    EXPECT_TRUE(e.kind() == clef::ErrorKind::model_error || e.param() == "chunk_tokens")
        << e.what();
  }
  // The GPU is usable again.
  auto small = rt::make_engine(on("auto"));
  EXPECT_FALSE(small.decide(request(10, kThirdQuestions)).body.empty());
}

/// A KV cache tensor larger than the device takes in one buffer (issue 53: `--parallel 64
/// --context-size 65536 --device Vulkan0` aborted the process inside ggml's scheduler): refused
/// at load with the arithmetic and the most sequences that fit, and that many load and decide.
TEST(GpuEngine, AKvCacheTensorLargerThanOneDeviceBufferIsRefusedWithTheArithmetic) {
  SKIP_WITHOUT_DEVICE();
  rt::EngineConfig c = on("auto");
  c.backbone.context_size = 65536;
  c.backbone.parallel = 64;
  c.backbone.chunk_tokens = 64;
  int most = 0;
  try {
    auto engine = rt::make_engine(c);
    std::cout << "[gpu] the device takes a 64 x 65536-token KV tensor in one buffer\n";
    return;
  } catch (const clef::Error& e) {
    std::cout << "[gpu] refused: " << e.what() << "\n";
    ASSERT_EQ(e.param(), "parallel") << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("65536 tokens x 64 sequences x 2 bytes"), std::string::npos) << what;
    const std::size_t at = what.find("at most ");
    ASSERT_NE(at, std::string::npos) << what;
    most = std::stoi(what.substr(at + 8));
  }
  ASSERT_GT(most, 0);
  ASSERT_LT(most, 64);
  c.backbone.parallel = most;
  auto fits = rt::make_engine(c);
  EXPECT_FALSE(fits.decide(request(10, kThirdQuestions)).body.empty());
  c.backbone.parallel = most + 1;
  EXPECT_THROW(rt::make_engine(c), clef::Error);
}

/// --gpu-layers auto (issue 44, the default): on a GPU too small for every layer, as many layers
/// as fit go to it and the rest stay on the CPU, and the placement says so; an explicit -1 on the
/// same GPU is refused at start naming gpu_layers. The GPU's size is set with gpu_memory_limit
/// between what one layer and what every layer needs.
TEST(GpuEngine, AutoLayersOffloadWhatFitsTheGpuAndSaySo) {
  SKIP_WITHOUT_DEVICE();
  rt::EngineConfig c = on("auto");
  c.backbone.gpu_layers = clef::backbone::kAutoGpuLayers;
  const clef::artifact::OpenedModel opened =
      clef::artifact::open_model({c.backbone_path, c.mmproj_path, c.head_path, c.head_config_path});
  const std::uint64_t all = rt::device_need(rt::measure_engine_memory(c, opened, true, -1));
  const std::uint64_t one = rt::device_need(rt::measure_engine_memory(c, opened, true, 1));
  ASSERT_LT(one, all);
  c.gpu_memory_limit = one + (all - one) / 3;
  auto engine = rt::make_engine(c);
  const std::string placement = engine.served().placement;
  std::cout << "[gpu] " << placement << "\n";
  EXPECT_NE(placement.find("on the CPU: --gpu-layers auto"), std::string::npos) << placement;
  EXPECT_EQ(placement.find("backbone 0/"), std::string::npos) << placement;
  EXPECT_FALSE(engine.decide(request(10, kThirdQuestions)).body.empty());
  // Under what the tower and the head need beside one layer: everything on the CPU, saying why
  // (before, the plan counted the tower and head on the GPU while they ran on the CPU).
  rt::EngineConfig none_fit = c;
  none_fit.gpu_memory_limit = rt::device_need(rt::measure_engine_memory(c, opened, true, 0)) - 1;
  auto on_cpu = rt::make_engine(none_fit);
  EXPECT_EQ(on_cpu.served().placement.rfind("CPU, ", 0), 0u) << on_cpu.served().placement;
  EXPECT_NE(on_cpu.served().placement.find("--gpu-layers auto"), std::string::npos)
      << on_cpu.served().placement;
  EXPECT_EQ(on_cpu.served().sequence_memory.find("Vulkan"), std::string::npos)
      << "the plan is the CPU's: " << on_cpu.served().sequence_memory;
  rt::EngineConfig all_layers = c;
  all_layers.backbone.gpu_layers = -1;
  try {
    rt::make_engine(all_layers);
    FAIL() << "every layer on a GPU planned too small for them";
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.param(), "gpu_layers") << e.what();
  }
}

/// 8 mixed requests of lavapipe's size: one or two questions, states of 1 to 60 words (one
/// past a 64-token piece), two images, two pairs sharing a state.
std::vector<Value> short_mix() {
  using clef::test::grey_png_uri;
  using clef::test::ticket_request;
  std::vector<Value> out;
  out.push_back(ticket_request("Production database is down", kOtherQuestions));
  out.push_back(ticket_request(clef::test::ticket_words(60), kThirdQuestions));
  out.push_back(ticket_request("What is in it?", kThirdQuestions, {grey_png_uri(32, 32)}));
  out.push_back(ticket_request(clef::test::ticket_words(60), kOtherQuestions));
  out.push_back(ticket_request("A", kThirdQuestions));
  out.push_back(ticket_request("Compare", kOtherQuestions, {grey_png_uri(48, 32)}));
  out.push_back(ticket_request(clef::test::ticket_words(12), kThirdQuestions));
  out.push_back(ticket_request("Production database is down", kThirdQuestions));
  return out;
}

TEST(GpuEngine, ContinuousBatchingOnTheDeviceGivesTheBytesOfSoloDeviceRuns) {
  SKIP_WITHOUT_DEVICE();
  // 8 mixed requests (short and long states, images, a truncated state but on lavapipe, shared
  // states) at parallel 4, with and without the state cache, against the same requests decided
  // alone on a one-sequence device engine without a cache.
  const auto config = [](int parallel, std::int64_t cache_mb) {
    rt::EngineConfig c = on("auto", cache_mb);
    c.backbone.context_size = 1024;
    c.backbone.chunk_tokens = 64;
    c.backbone.parallel = parallel;
    return c;
  };
  const std::vector<Value> bodies = software_device() ? short_mix() : clef::test::mixed_requests();
  std::vector<std::string> alone;
  {
    auto solo = rt::make_engine(config(1, 0));
    for (const Value& body : bodies) alone.push_back(solo.decide(body).body);
  }
  // On lavapipe one batched engine with the cache, one round (requests 0 and 7, 1 and 3 share a
  // state: hits beside misses when the first of a pair is done first).
  std::vector<std::int64_t> caches{64};
  if (!software_device()) caches.insert(caches.begin(), 0);
  for (std::int64_t cache_mb : caches) {
    SCOPED_TRACE("state cache " + std::to_string(cache_mb) + " MiB");
    auto batched = rt::make_engine(config(4, cache_mb));
    ASSERT_EQ(batched.runner->parallel(), 4);
    std::cout << "[gpu] " << batched.served().placement << "; " << batched.served().sequence_memory
              << "\n";
    for (int round = 0; round < sized(2, 1); ++round) {
      const std::vector<std::string> got = clef::test::decide_together(batched, bodies);
      for (std::size_t i = 0; i < bodies.size(); ++i) {
        EXPECT_EQ(got[i], alone[i]) << "round " << round << ", request " << i;
      }
    }
  }
}

TEST(GpuEngine, ImagesGoThroughTheVisionTowerOnTheDevice) {
  SKIP_WITHOUT_DEVICE();
  auto gpu = rt::make_engine(on("auto"));
  auto cpu = rt::make_engine(on("cpu"));
  const std::string placement = gpu.served().placement;
  EXPECT_NE(placement.find("vision tower"), std::string::npos) << placement;
  const std::string images = std::string(CLEF_TEST_DATA) + "/oracle/coreai/images/";
  clef::test::Parity parity;
  std::vector<std::pair<int, int>> sizes{{64, 48}, {96, 64}};
  if (!software_device()) sizes = {{64, 48}, {300, 200}, {448, 448}};
  bool repeated = false;
  for (const auto& [w, h] : sizes) {
    const Value body = clef::test::ticket_request("What is in the picture?",
                                                  software_device() ? kThirdQuestions : kQuestions,
                                                  {clef::test::grey_png_uri(w, h)});
    const rt::Decision g = gpu.decide(body);
    if (!repeated) {
      EXPECT_EQ(gpu.decide(body).body, g.body) << w << "x" << h;
    }
    repeated = true;
    parity.add(cpu.decide(body).logits, g.logits);
  }
  print("tiny model, images through the tower", parity);
  expect_within_bar(parity);
}

TEST(GpuEngine, AnImageTooLargeForTheDeviceIsRefusedAndTheEngineGoesOn) {
  SKIP_WITHOUT_DEVICE();
  rt::EngineConfig c = on("auto");
  c.backbone.context_size = 32768;
  c.max_image_tokens = 0;  // only the tower's memory bounds the image
  c.max_request_image_tokens = 0;
  auto gpu = rt::make_engine(c);
  const rt::ServedLimits limits = gpu.served().limits;
  clef::device::Placement placement = clef::device::resolve("auto", -1);
  ASSERT_NE(placement.gpu, nullptr);
  std::size_t free = 0, total = 0;
  ggml_backend_dev_memory(placement.gpu, &free, &total);
  std::cout << "[gpu] vision memory limit " << (limits.max_vision_memory >> 20) << " MiB; "
            << placement.info.name << " " << (total >> 20) << " MiB (" << (free >> 20)
            << " MiB free)\n";
  EXPECT_LE(limits.max_vision_memory, total);
  const Value before = request(5, kThirdQuestions);
  const std::string expected = gpu.decide(before).body;
  // 4096 x 4096 px: 65,536 patches, whose attention alone is far over the device's memory.
  const Value huge = clef::test::ticket_request("What is in the picture?", kThirdQuestions,
                                                {clef::test::grey_png_uri(4096, 4096)});
  try {
    gpu.decide(huge);
    FAIL() << "an image over the device's memory was decided";
  } catch (const clef::Error& e) {
    std::cout << "[gpu] refused: " << e.what() << "\n";
    EXPECT_EQ(e.kind(), clef::ErrorKind::payload_too_large) << e.what();
    EXPECT_EQ(e.param(), "images.0") << e.what();
  }
  EXPECT_EQ(gpu.decide(before).body, expected);
}

/// The parity corpus: fixture requests (text and JSON states, and images in the g256 and native
/// arms) and long ticket states. On lavapipe, where a token costs ~70 ms: three text fixture
/// requests, one g256 one, ticket states of 60 and 300 words and a small image.
std::vector<Value> parity_corpus() {
  const clef::eval::Fixture fixture =
      clef::eval::load_fixture(std::string(CLEF_TEST_DATA) + "/oracle/coreai/fixture.json");
  std::vector<Value> out;
  for (const auto& [arm, count] : {std::pair{"text", sized(24, 3)}, std::pair{"g256", sized(4, 1)},
                                   std::pair{"native", sized(2, 0)}}) {
    clef::eval::VerifyOptions o;
    o.arms = {arm};
    int taken = 0;
    for (const clef::eval::FixtureRun* run : clef::eval::select_runs(fixture, o)) {
      if (taken == count) break;
      try {
        out.push_back(clef::eval::run_request(fixture, *run));
        ++taken;
      } catch (const clef::Error&) {
        // a withheld request or a photograph not in this copy
      }
    }
  }
  for (int words : {sized(1500, 60), sized(4000, 300)}) {
    if (words > 0) out.push_back(request(words, kQuestions));
  }
  if (software_device()) {
    out.push_back(clef::test::ticket_request("What is in the picture?", kQuestions,
                                             {clef::test::grey_png_uri(64, 64)}));
  }
  return out;
}

void expect_parity_on(const char* preset, const char* quant) {
  clef::test::TempDir dir(std::string("clef-device-parity-") + quant);
  clef::testmodel::MakeOptions o;
  o.dir = dir.path() / "model";
  o.seed = 11;
  o.preset = preset;
  o.quant = quant;
  clef::testmodel::make_test_model(o);
  rt::EngineConfig base = rt::EngineConfig::from_model_dir(o.dir.string());
  base.backbone.context_size = 8192;
  base.backbone.threads = 1;
  base.state_cache_mb = 0;
  rt::EngineConfig device = base;
  device.backbone.device = "auto";
  device.backbone.gpu_layers = -1;
  rt::EngineConfig cpu = base;
  cpu.backbone.device = "cpu";
  auto on_device = rt::make_engine(device);
  auto on_cpu = rt::make_engine(cpu);
  std::cout << "[gpu] " << on_device.served().placement << "\n";
  clef::test::Parity parity;
  for (const Value& body : parity_corpus()) {
    parity.add(on_cpu.decide(body).logits, on_device.decide(body).logits);
  }
  print((std::string(preset) + " " + quant +
         (software_device() ? ", 4 fixture requests + ticket states + an image"
                            : ", fixture text/JSON/images + long states"))
            .c_str(),
        parity);
  expect_within_bar(parity);
}

TEST(GpuEngine, ParityWithTheCpuOnTheTestCorpusF16) {
  SKIP_WITHOUT_DEVICE();
  expect_parity_on("small", "F16");
}

TEST(GpuEngine, ParityWithTheCpuOnTheTestCorpusQ4KM) {
  SKIP_WITHOUT_DEVICE();
  expect_parity_on("small", "Q4_K_M");
}

}  // namespace
