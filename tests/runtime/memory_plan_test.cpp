// The memory plan (issue 44): what an engine takes against what the machine and the GPU have,
// refusals with the arithmetic, the state cache and vision memory sized to what is left, and
// gpu_layers auto fitted to a GPU's free memory. The arithmetic on data here; on a real model
// (a no_alloc load measured by llama.cpp) at the end.
#include "runtime/engine/memory_plan.hpp"

#include <gtest/gtest.h>

#include <string>

#include "artifact/open_model.hpp"
#include "gguf/gguf_file.hpp"
#include "json/parse.hpp"
#include "runtime/engine/engine_config.hpp"
#include "runtime/engine/engine_memory.hpp"
#include "runtime/make_engine.hpp"
#include "support/tiny_engine_config.hpp"
#include "util/error.hpp"

namespace {

namespace rt = clef::runtime;
using clef::Error;

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

/// Clef 27B's shape on a CPU at context 16,384 (figures of a shape-27b no_alloc load).
rt::MemoryNeeds cpu_27b() {
  rt::MemoryNeeds n;
  n.backbone.host = {14 * GiB, 1174 * MiB, 870 * MiB};
  n.head = 489 * MiB;
  n.tower = 888 * MiB;
  n.hidden_rows = 320 * MiB;
  return n;
}

rt::MemoryBudget host_budget(std::uint64_t bytes, std::uint64_t physical = 24 * GiB) {
  rt::MemoryBudget b;
  b.host = {bytes, "available (MemAvailable)"};
  b.physical = physical;
  return b;
}

rt::MemoryRequest request() {
  rt::MemoryRequest r;
  r.parallel = 1;
  r.context_size = 16384;
  return r;
}

std::uint64_t fixed_host(const rt::MemoryNeeds& n) {
  return n.backbone.host.total() + n.head + n.tower + n.hidden_rows + rt::kHostReserve;
}

TEST(MemoryPlan, GivesWhatIsLeftToOneImageAndTheStateCache) {
  const rt::MemoryNeeds needs = cpu_27b();
  const std::uint64_t budget = fixed_host(needs) + 3 * GiB;
  const rt::MemoryPlan plan = rt::plan_memory(needs, host_budget(budget), request());
  EXPECT_EQ(plan.vision_memory, 3 * GiB / 2) << "half of what is left";
  EXPECT_EQ(plan.state_cache, 3 * GiB / 2) << "the rest";
  ASSERT_EQ(plan.lines.size(), 2u);
  EXPECT_NE(plan.lines[0].find("backbone weights 14.00 GiB"), std::string::npos) << plan.text();
  EXPECT_NE(plan.lines[0].find("parallel 1 x context 16384"), std::string::npos) << plan.text();
  EXPECT_NE(plan.lines[1].find("state cache 1.50 GiB"), std::string::npos) << plan.text();
}

TEST(MemoryPlan, CapsTheAutomaticStateCacheAndVisionMemory) {
  const rt::MemoryNeeds needs = cpu_27b();
  const rt::MemoryPlan plan =
      rt::plan_memory(needs, host_budget(fixed_host(needs) + 100 * GiB, 64 * GiB), request());
  EXPECT_EQ(plan.vision_memory, 16 * GiB) << "a quarter of physical memory";
  EXPECT_EQ(plan.state_cache, rt::kMostAutoStateCache);
}

TEST(MemoryPlan, WithoutAVisionTowerTheStateCacheTakesTheRest) {
  rt::MemoryNeeds needs = cpu_27b();
  needs.tower = 0;
  const rt::MemoryPlan plan =
      rt::plan_memory(needs, host_budget(fixed_host(needs) + 2 * GiB), request());
  EXPECT_EQ(plan.vision_memory, 0u);
  EXPECT_EQ(plan.state_cache, 2 * GiB);
}

TEST(MemoryPlan, RefusesAModelThatDoesNotFitWithTheArithmetic) {
  const rt::MemoryNeeds needs = cpu_27b();
  try {
    rt::plan_memory(needs, host_budget(16 * GiB), request());
    FAIL() << "planned a model over the machine's memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "context_size");
    const std::string what = e.what();
    EXPECT_NE(what.find("does not fit this machine's memory"), std::string::npos) << what;
    EXPECT_NE(what.find("of 16.00 GiB available (MemAvailable)"), std::string::npos) << what;
    EXPECT_NE(what.find("sequences 1.15 GiB"), std::string::npos) << what;
  }
}

TEST(MemoryPlan, RefusesExplicitSettingsOverWhatIsLeftNamingThem) {
  const rt::MemoryNeeds needs = cpu_27b();
  const rt::MemoryBudget budget = host_budget(fixed_host(needs) + 2 * GiB);
  rt::MemoryRequest cache = request();
  cache.state_cache_mb = 4096;
  try {
    rt::plan_memory(needs, budget, cache);
    FAIL() << "a 4 GiB state cache in 1 GiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "state_cache_mb") << e.what();
  }
  rt::MemoryRequest vision = request();
  vision.max_vision_memory = 3 * GiB;
  try {
    rt::plan_memory(needs, budget, vision);
    FAIL() << "3 GiB of vision compute in 2 GiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "max_vision_memory") << e.what();
  }
  rt::MemoryRequest fits = request();
  fits.state_cache_mb = 512;
  fits.max_vision_memory = GiB;
  const rt::MemoryPlan plan = rt::plan_memory(needs, budget, fits);
  EXPECT_EQ(plan.state_cache, 512 * MiB);
  EXPECT_EQ(plan.vision_memory, GiB);
  fits.state_cache_mb = 0;
  EXPECT_EQ(rt::plan_memory(needs, budget, fits).state_cache, 0u) << "0 is off";
}

/// A GPU model of 64 layers of 250 MiB with 20 MiB of sequence memory each, the output layer
/// (-1) 700 MiB more.
rt::MemoryNeeds on_gpu(int layers) {
  rt::MemoryNeeds n;
  const std::uint64_t l = layers < 0 ? 64 : static_cast<std::uint64_t>(layers);
  n.backbone.device = {l * 250 * MiB + (layers < 0 ? 700 * MiB : 0), l * 20 * MiB, 400 * MiB};
  n.backbone.host = {(64 - l) * 250 * MiB + 700 * MiB, (64 - l) * 20 * MiB, 200 * MiB};
  n.head = 489 * MiB;
  n.tower = 888 * MiB;
  n.head_and_tower_on_device = true;
  return n;
}

TEST(FitGpuLayers, OffloadsWhatFitsByBisection) {
  int calls = 0;
  auto needs_at = [&](int layers) {
    ++calls;
    return on_gpu(layers);
  };
  // fixed: 400 MiB compute + head + tower + reserve; each layer 270 MiB.
  const std::uint64_t fixed = 400 * MiB + 489 * MiB + 888 * MiB + rt::kDeviceReserve;
  EXPECT_EQ(rt::fit_gpu_layers(64, fixed + 13 * 270 * MiB + 10 * MiB, needs_at), 13);
  EXPECT_LE(calls, 9) << "1 for all, then about log2(65)";
  EXPECT_EQ(rt::fit_gpu_layers(64, 80 * GiB, needs_at), -1) << "everything fits";
  EXPECT_EQ(rt::fit_gpu_layers(64, fixed - 1, needs_at), 0) << "not even the fixed part";
  EXPECT_EQ(rt::fit_gpu_layers(64, fixed + 64 * 270 * MiB, needs_at), 64)
      << "every layer, not the output layer";
}

TEST(MemoryPlan, RefusesWhatDoesNotFitTheGpuNamingGpuLayers) {
  rt::MemoryBudget budget = host_budget(64 * GiB);
  budget.device = "CUDA0";
  budget.device_free = 8 * GiB;
  try {
    rt::plan_memory(on_gpu(-1), budget, request());
    FAIL() << "planned 17 GB of layers on an 8 GiB GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "gpu_layers");
    EXPECT_NE(std::string(e.what()).find("of 8.00 GiB free"), std::string::npos) << e.what();
  }
  const rt::MemoryPlan plan = rt::plan_memory(on_gpu(13), budget, request());
  EXPECT_NE(plan.lines[1].find("CUDA0: backbone weights"), std::string::npos) << plan.text();
  EXPECT_GT(plan.vision_memory, 0u) << "the tower computes on the GPU: what the GPU has left";
  EXPECT_LE(plan.vision_memory, 8 * GiB - rt::device_need(on_gpu(13)));
}

// On a real model: llama.cpp's no_alloc measurement, and an engine refused or sized by its plan.

rt::EngineConfig tiny_config() {
  rt::EngineConfig c = clef::test::tiny_engine_config();
  c.backbone.context_size = 1024;
  return c;
}

TEST(EngineMemoryPlan, MeasuresTheBackboneAsLlamaCppWillAllocateIt) {
  rt::EngineConfig c = tiny_config();
  const clef::artifact::OpenedModel opened =
      clef::artifact::open_model({c.backbone_path, c.mmproj_path, c.head_path, c.head_config_path});
  const rt::MemoryNeeds needs = rt::measure_engine_memory(c, opened, false, 0);
  std::uint64_t tensors = 0;
  for (const auto& t : clef::gguf::GgufFile(c.backbone_path, true).tensors()) tensors += t.bytes;
  EXPECT_GE(needs.backbone.host.weights, tensors * 95 / 100) << "every weight, once";
  EXPECT_LE(needs.backbone.host.weights, tensors * 105 / 100) << "every weight, once";
  EXPECT_EQ(needs.backbone.device.total(), 0u) << "nothing on a GPU";
  EXPECT_GT(needs.backbone.host.compute, 0u);
  // The context's KV and recurrent states: what the engine measures per sequence, and more with
  // more sequences and a longer context.
  auto engine = rt::make_engine(c);
  const std::uint64_t per_sequence = engine.served().limits.sequence_bytes;
  EXPECT_GE(needs.backbone.host.sequences, per_sequence * 9 / 10);
  EXPECT_LE(needs.backbone.host.sequences, per_sequence * 11 / 10);
  rt::EngineConfig four = c;
  four.backbone.parallel = 4;
  {
    // One source for one number (issue 53: the startup log said "8.5 MiB per sequence" beside the
    // plan's "sequences 8.03 MiB"): the engine's per-sequence bytes are the plan's, within a byte
    // a token of the context.
    auto four_engine = rt::make_engine(four);
    const std::uint64_t planned =
        rt::measure_engine_memory(four, opened, false, 0).backbone.host.sequences;
    const std::uint64_t said = four_engine.served().limits.sequence_bytes * 4;
    EXPECT_GE(said, planned);
    EXPECT_LE(said - planned, 4u * static_cast<std::uint64_t>(four.backbone.context_size));
  }
  EXPECT_GE(rt::measure_engine_memory(four, opened, false, 0).backbone.host.sequences,
            needs.backbone.host.sequences * 4 * 9 / 10);
  EXPECT_EQ(needs.hidden_rows, 1024u * 64u * 4u) << "context x n_embd f32";
  EXPECT_GT(needs.head, 0u);
  EXPECT_GT(needs.tower, 0u);
}

TEST(EngineMemoryPlan, AModelOverTheMemoryLimitIsRefusedBeforeItsWeightsLoad) {
  rt::EngineConfig c = tiny_config();
  c.memory_limit = 64 * MiB;  // under the runtime reserve alone
  try {
    rt::make_engine(c);
    FAIL() << "an engine over its memory limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "context_size");
    EXPECT_NE(std::string(e.what()).find("of 64.00 MiB (--memory-limit)"), std::string::npos)
        << e.what();
  }
}

TEST(EngineMemoryPlan, SizesTheStateCacheToWhatIsLeft) {
  rt::EngineConfig c = tiny_config();
  c.memory_limit = 700 * MiB;
  auto engine = rt::make_engine(c);
  const std::uint64_t budget = engine.runner->state_cache_stats().budget;
  EXPECT_GT(budget, 0u);
  EXPECT_LT(budget, 200 * MiB) << "700 MiB less the reserve, the model and half for images";
  const std::string memory = engine.served().sequence_memory;
  EXPECT_NE(memory.find("of 700.00 MiB (--memory-limit)"), std::string::npos) << memory;
  c.state_cache_mb = 4096;
  EXPECT_THROW(rt::make_engine(c), Error) << "an explicit state cache over what is left";
}

}  // namespace
