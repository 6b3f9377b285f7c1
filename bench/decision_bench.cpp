// clef's speed against the raw backbone prefill, measured side by side in one run.
//
//   raw_prefill     llama_decode over the record's ids as a plain llama.cpp user would (LM-head
//                   logits for the last token only), same chunk layout and flash-attention setting
//   raw_prefill_llama_defaults / _llama_tools  the same with llama_model_default_params() and
//                   llama_context_default_params() (4 threads) / the physical cores as threads
//   hidden_states   clef's backbone: final-norm rows of every token through the nextn path
//   decision        the whole decision: parse + record + backbone + lexical rows + head + answers
//                   (no state cache: the layout is not cut at snapshot points)
//   decision_default  the same with the default state cache, each state new (a miss)
//   new_questions_cold/warm  the same ~2,000-token state asked a new 3-question schema without
//                   and with the state cached (issue 11's reuse ratio, warm/cold)
//   json_parse      a 16 MiB body, and 16 MiB of zeros, parsed (no model)
//   release_compute_memory  the backbone's context made anew (what an idle server pays after a
//                   long record to give its compute-buffer pages back)
//
// After the benchmarks it prints the ratios decision/raw_prefill and hidden_states/raw_prefill.
// Model: the `small` test model by default (generated once into the build dir); set
// CLEF_BENCH_PRESET=tiny|small|shape-0.8b, or CLEF_BENCH_MODEL_DIR=DIR for real files.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "backbone/backbone.hpp"
#include "backbone/llama_handles.hpp"
#include "bench_requests.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "runtime/make_engine.hpp"
#include "runtime/loop/decision_queue.hpp"
#include "support/prefill_alone.hpp"
#include "testmodel/make_test_model.hpp"

namespace {

using clef::bench::kCardQuestions;
using clef::bench::kFollowUpQuestions;
using clef::bench::request_with_state;

namespace fs = std::filesystem;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

fs::path model_dir() {
  const std::string given = env_or("CLEF_BENCH_MODEL_DIR", "");
  if (!given.empty()) return given;
  const std::string preset = env_or("CLEF_BENCH_PRESET", "small");
  const fs::path dir = fs::path(CLEF_BINARY_DIR) / "bench-models" / (preset + "-seed0");
  if (!fs::exists(dir / "joint_head_config.json")) {
    clef::testmodel::MakeOptions o;
    o.dir = dir;
    o.preset = preset;
    clef::testmodel::make_test_model(o);
  }
  return dir;
}

/// Shared state: one engine without a state cache (for cold decisions and record ids), one with
/// it, and one plain llama context.
struct Fixture {
  clef::runtime::EngineConfig config;
  clef::runtime::Engine engine;
  clef::runtime::Engine cached_engine;
  /// The engine as `clef serve` makes it: the default state cache (a sixteenth of RAM).
  clef::runtime::Engine default_engine;
  int default_engine_states = 0;  ///< states decided by default_engine so far
  std::unique_ptr<clef::backbone::Backbone> backbone;
  clef::backbone::LlamaContextPtr raw_ctx;
  /// The same file as a plain llama.cpp user loads it: llama_model_default_params() (repacked
  /// CPU buffer types on) and llama_context_default_params() (its default threads).
  clef::backbone::LlamaModelPtr default_model;
  clef::backbone::LlamaContextPtr default_ctx;
  /// The same model with the threads llama.cpp's own tools (llama-cli, llama-server) default to:
  /// the physical cores (common's cpu_get_num_math), where the library default is 4.
  clef::backbone::LlamaContextPtr tools_ctx;

  Fixture() {
    config = clef::runtime::EngineConfig::from_model_dir(model_dir().string());
    config.backbone.context_size = 8192;
    config.backbone.threads = std::atoi(env_or("CLEF_BENCH_THREADS", "0").c_str());
    config.state_cache_mb = 0;  // every decision cold
    engine = clef::runtime::make_engine(config);
    clef::runtime::EngineConfig cached_config = config;
    cached_config.state_cache_mb = 1024;
    cached_engine = clef::runtime::make_engine(cached_config);
    clef::runtime::EngineConfig default_config = config;
    default_config.state_cache_mb = clef::runtime::EngineConfig{}.state_cache_mb;
    default_engine = clef::runtime::make_engine(default_config);
    backbone = std::make_unique<clef::backbone::Backbone>(config.backbone_path, config.backbone);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(config.backbone.context_size);
    cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(config.backbone.chunk_tokens);
    cp.n_seq_max = 1;
    const int threads = clef::backbone::resolved_threads(config.backbone);
    cp.n_threads = cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    raw_ctx.reset(llama_init_from_model(backbone->model(), cp));
    default_model.reset(
        llama_model_load_from_file(config.backbone_path.c_str(), llama_model_default_params()));
    llama_context_params dp = llama_context_default_params();
    dp.n_ctx = cp.n_ctx;
    dp.n_batch = dp.n_ubatch = cp.n_batch;  // the same chunk layout
    default_ctx.reset(llama_init_from_model(default_model.get(), dp));
    dp.n_threads = dp.n_threads_batch = clef::backbone::physical_cores();
    tools_ctx.reset(llama_init_from_model(default_model.get(), dp));
  }

  std::vector<std::int32_t> ids_of(const clef::json::Value& body) {
    const clef::runtime::PreparedRequest prepared = engine.prepare(body);  // owns the ids
    const auto& ids = prepared.record.ids;
    return {ids.begin(), ids.end()};
  }

  /// Plain prefill: same chunk layout, logits for the last token only (on `ctx`: raw_ctx, or
  /// default_ctx for llama.cpp's defaults).
  void raw_prefill(const std::vector<std::int32_t>& ids, llama_context* ctx = nullptr) {
    if (ctx == nullptr) ctx = raw_ctx.get();
    llama_memory_clear(llama_get_memory(ctx), true);
    const int total = static_cast<int>(ids.size());
    const int chunk = config.backbone.chunk_tokens;
    llama_batch b = llama_batch_init(chunk, 0, 1);
    for (int start = 0; start < total;) {
      const int n = clef::backbone::chunk_length(total, start, chunk);
      b.n_tokens = n;
      for (int i = 0; i < n; ++i) {
        b.token[i] = ids[start + i];
        b.pos[i] = start + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = (start + i == total - 1) ? 1 : 0;
      }
      if (llama_decode(ctx, b) != 0) std::abort();
      start += n;
    }
    llama_batch_free(b);
    benchmark::DoNotOptimize(llama_get_logits_ith(ctx, -1));
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void set_counters(benchmark::State& state, std::size_t tokens) {
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(tokens) * state.iterations(),
                                               benchmark::Counter::kIsRate);
}

void BM_raw_prefill(benchmark::State& state) {
  auto& f = fixture();
  const auto ids = f.ids_of(clef::json::parse(request_with_state(state.range(0))));
  for (auto _ : state) f.raw_prefill(ids);
  set_counters(state, ids.size());
}

/// Issue 19: the raw prefill as a llama.cpp user gets it by default (repacking on, its threads).
void BM_raw_prefill_llama_defaults(benchmark::State& state) {
  auto& f = fixture();
  const auto ids = f.ids_of(clef::json::parse(request_with_state(state.range(0))));
  for (auto _ : state) f.raw_prefill(ids, f.default_ctx.get());
  set_counters(state, ids.size());
}

/// The same with the physical cores as threads (llama.cpp's tools' default).
void BM_raw_prefill_llama_tools(benchmark::State& state) {
  auto& f = fixture();
  const auto ids = f.ids_of(clef::json::parse(request_with_state(state.range(0))));
  for (auto _ : state) f.raw_prefill(ids, f.tools_ctx.get());
  set_counters(state, ids.size());
}

void BM_hidden_states(benchmark::State& state) {
  auto& f = fixture();
  const auto ids = f.ids_of(clef::json::parse(request_with_state(state.range(0))));
  for (auto _ : state) benchmark::DoNotOptimize(clef::test::hidden_states(*f.backbone, ids));
  set_counters(state, ids.size());
}

void BM_decision(benchmark::State& state) {
  auto& f = fixture();
  const std::string text = request_with_state(state.range(0));
  std::size_t tokens = 0;
  double head_ms = 0;
  for (auto _ : state) {
    const auto d = f.engine.decide(clef::json::parse(text));
    tokens = static_cast<std::size_t>(d.input_tokens);
    head_ms += d.timings.head_ms;
  }
  set_counters(state, tokens);
  state.counters["head_ms"] = head_ms / static_cast<double>(state.iterations());
}

/// A 16 MiB request-like body (the largest the server accepts by default) parsed, and 16 MiB of
/// zeros (8M values: the most values per byte). Arg: 0 the body, 1 the zeros.
void BM_json_parse(benchmark::State& state) {
  std::string text = "[";
  if (state.range(0) == 0) {
    for (int i = 0; text.size() + 200 < (16u << 20); ++i) {
      if (i) text += ',';
      text += R"({"id":)" + std::to_string(i) + R"(,"text":"caf\u00e9 \"quoted\" line\nnext )" +
              "\xE2\x82\xAC" + R"(","score":)" + std::to_string(i * 0.001) +
              R"(,"tags":["a","b",null,true,1e-7],"nested":{"z":[1,2,3],"a":-0.5}})";
    }
  } else {
    text += '0';
    while (text.size() + 3 < (16u << 20)) text += ",0";
  }
  text += ']';
  for (auto _ : state) benchmark::DoNotOptimize(clef::json::parse(text));
  state.SetBytesProcessed(static_cast<std::int64_t>(text.size()) * state.iterations());
}
BENCHMARK(BM_json_parse)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

/// The decision with the default settings (state cache on): every iteration a new state, so a
/// miss that cuts the layout at the snapshot points and keeps the snapshots.
void BM_decision_default(benchmark::State& state) {
  auto& f = fixture();
  std::size_t tokens = 0;
  for (auto _ : state) {
    // A state never seen before, across repetitions too.
    const auto body = clef::json::parse(
        request_with_state(state.range(0), kCardQuestions, ++f.default_engine_states));
    const auto d = f.default_engine.decide(body);
    tokens = static_cast<std::size_t>(d.input_tokens);
    if (d.cached_tokens > 32) state.SkipWithError("a new state was found in the cache");
  }
  set_counters(state, tokens);
}

/// What the server pays when it goes idle after a record over 2,048 tokens: the backbone's
/// context made anew (its compute-buffer pages given back).
void BM_release_compute_memory(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) f.backbone->release_compute_memory();
}

/// Issue 11's reuse benchmark: the same ~2,000-token state asked a new 3-question schema, cold
/// (no cache) and warm (the state cached by an earlier question set).
constexpr int kReuseWords = 1800;

void BM_new_questions_cold(benchmark::State& state) {
  auto& f = fixture();
  const std::string text = request_with_state(kReuseWords, kFollowUpQuestions);
  std::size_t tokens = 0;
  for (auto _ : state)
    tokens = static_cast<std::size_t>(f.engine.decide(clef::json::parse(text)).input_tokens);
  set_counters(state, tokens);
}

void BM_new_questions_warm(benchmark::State& state) {
  auto& f = fixture();
  f.cached_engine.decide(clef::json::parse(request_with_state(kReuseWords)));  // caches the state
  const std::string text = request_with_state(kReuseWords, kFollowUpQuestions);
  std::size_t cached = 0;
  for (auto _ : state) {
    const auto d = f.cached_engine.decide(clef::json::parse(text));
    cached = static_cast<std::size_t>(d.cached_tokens);
  }
  state.counters["cached_tokens"] = static_cast<double>(cached);
  const auto stats = f.cached_engine.runner->state_cache_stats();
  state.counters["cache_MiB"] = static_cast<double>(stats.bytes) / (1 << 20);
}

BENCHMARK(BM_new_questions_cold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_new_questions_warm)->Unit(benchmark::kMillisecond);

/// Issue 11's fairness benchmark, through the server's queue (no state cache): the latency of a
/// ~300-token request alone (arg 0) and sent while a ~8,000-token one is being prefilled (arg 1;
/// the long one pauses between its batches for it).
constexpr int kShortWords = 20;
constexpr int kLongWords = 7300;
constexpr int kBatchRecords = 8;

/// The server's queue over an engine without a state cache that decides `parallel` records
/// together (1: one at a time, a long prefill pausing for shorter requests) with `context` tokens
/// per record; one per (parallel, context), made on first use.
clef::runtime::DecisionQueue& queue_with(int parallel, int context) {
  static std::map<std::pair<int, int>, std::unique_ptr<clef::runtime::DecisionQueue>> queues;
  auto& q = queues[{parallel, context}];
  if (!q) {
    clef::runtime::EngineConfig c = fixture().config;
    c.backbone.parallel = parallel;
    c.backbone.context_size = context;
    q = std::make_unique<clef::runtime::DecisionQueue>(
        [c] { return clef::runtime::make_engine(c); }, 64, clef::runtime::warmup_request());
    q->start();
    if (!q->wait_until_ready(std::chrono::minutes(10))) std::abort();
  }
  return *q;
}

/// Args: 0 the short request alone and 1 beside the long one on a one-at-a-time queue (the long
/// prefill pauses for it); 2 alone and 3 beside on a --parallel 2 queue (the two are batched).
void BM_fairness(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  auto& q = queue_with(state.range(0) >= 2 ? 2 : 1, 8192);
  const bool beside = state.range(0) % 2 == 1;
  const clef::json::Value short_body = clef::json::parse(request_with_state(kShortWords));
  const clef::json::Value long_body = clef::json::parse(request_with_state(kLongWords));
  int short_tokens = 0;
  int long_tokens = 0;
  for (auto _ : state) {
    std::future<clef::runtime::DecisionOutcome> long_done;
    if (beside) {
      auto prepared = q.prepare(long_body);
      long_tokens = prepared.input_tokens();
      long_done = q.submit(std::move(prepared));
      while (q.in_flight() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well into the prefill
    }
    const auto t0 = Clock::now();
    auto prepared = q.prepare(short_body);
    short_tokens = prepared.input_tokens();
    auto outcome = q.submit(std::move(prepared)).get();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    if (outcome.status != clef::runtime::DecisionOutcome::Status::decided) std::abort();
    if (long_done.valid() &&
        long_done.get().status != clef::runtime::DecisionOutcome::Status::decided) {
      std::abort();
    }
  }
  state.counters["short_tokens"] = short_tokens;
  state.counters["long_tokens"] = long_tokens;
}

/// Issue 29's gate: a gone client is stopped within one piece. A ~8,000-token request is
/// submitted to a queue deciding one at a time (arg 1) or two together (arg 2); 300 ms into its
/// prefill its cancellation flag is set (what the HTTP thread does when it sees the client
/// leave); the time until the loop hands back its outcome (cancelled). Counter `piece_ms`: what
/// one kPausablePiece of that prefill takes on average (its whole prefill time over its pieces,
/// measured alone first), the bound.
void BM_stop(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  auto& q = queue_with(static_cast<int>(state.range(0)), 8192);
  const clef::json::Value long_body = clef::json::parse(request_with_state(kLongWords));
  auto alone = q.submit(q.prepare(long_body)).get();
  if (alone.status != clef::runtime::DecisionOutcome::Status::decided) std::abort();
  const double prefill_ms = alone.decision.timings.backbone_ms;
  const int tokens = alone.decision.input_tokens;
  for (auto _ : state) {
    clef::runtime::Cancellation gone;
    auto done = q.submit(q.prepare(long_body, gone));
    while (q.in_flight() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well into the prefill
    const auto t0 = Clock::now();
    gone.cancel();
    const auto outcome = done.get();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    if (outcome.status != clef::runtime::DecisionOutcome::Status::cancelled) std::abort();
  }
  state.counters["piece_ms"] =
      prefill_ms / ((tokens + clef::backbone::kPausablePiece - 1) / clef::backbone::kPausablePiece);
}

/// Issue 11's batching benchmark, through the server's queue (no state cache): 8 distinct
/// ~300-token requests submitted at once to a queue deciding one at a time (arg 1) or 8 together
/// (arg 8, continuous batching); the time until all 8 are answered.
void BM_batching(benchmark::State& state) {
  const int parallel = static_cast<int>(state.range(0));
  auto& q = queue_with(parallel, 1024);
  std::vector<clef::json::Value> bodies;
  for (int i = 0; i < kBatchRecords; ++i) {
    bodies.push_back(clef::json::parse(request_with_state(kShortWords + i)));  // distinct records
  }
  std::size_t tokens = 0;
  for (auto _ : state) {
    std::vector<std::future<clef::runtime::DecisionOutcome>> answers;
    tokens = 0;
    for (const auto& body : bodies) {
      auto prepared = q.prepare(body);
      tokens += static_cast<std::size_t>(prepared.input_tokens());
      answers.push_back(q.submit(std::move(prepared)));
    }
    for (auto& a : answers) {
      if (a.get().status != clef::runtime::DecisionOutcome::Status::decided) std::abort();
    }
  }
  set_counters(state, tokens);
}

/// Issue 11's batching question, asked of llama.cpp itself: 8 distinct ~300-token records
/// prefilled one after another (arg 0: 8 llama_decode calls on one sequence) or as 8 sequences of
/// one llama_decode (n_seq_max 8, no output rows; arg 1: one ubatch of all their tokens, arg 2:
/// ubatches of 512 tokens, 64 of each record). The ratio is the most any batching scheduler could
/// gain over serial decisions on this machine.

void BM_raw_batch(benchmark::State& state) {
  auto& f = fixture();
  const bool batched = state.range(0) >= 1;
  std::vector<std::vector<std::int32_t>> records;
  int total = 0;
  for (int i = 0; i < kBatchRecords; ++i) {
    const std::string words = request_with_state(kShortWords + i);  // distinct records
    records.push_back(f.ids_of(clef::json::parse(words)));
    total += static_cast<int>(records.back().size());
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_seq_max = batched ? kBatchRecords : 1;
  cp.n_ctx = static_cast<uint32_t>(batched ? 512 * kBatchRecords : 512);
  cp.n_batch = static_cast<uint32_t>(batched ? total : 512);
  cp.n_ubatch = static_cast<uint32_t>(state.range(0) == 1 ? total : 512);
  const int threads = clef::backbone::resolved_threads(f.config.backbone);
  cp.n_threads = cp.n_threads_batch = threads;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.n_outputs_max = static_cast<uint32_t>(cp.n_seq_max);  // libllama keeps a row per sequence
  clef::backbone::LlamaContextPtr ctx(llama_init_from_model(f.backbone->model(), cp));
  if (!ctx) std::abort();
  llama_batch b = llama_batch_init(total, 0, 1);
  auto add = [&](int seq, const std::vector<std::int32_t>& ids) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const int k = b.n_tokens++;
      b.token[k] = ids[i];
      b.pos[k] = static_cast<llama_pos>(i);
      b.n_seq_id[k] = 1;
      b.seq_id[k][0] = seq;
      b.logits[k] = 0;
    }
  };
  for (auto _ : state) {
    llama_memory_clear(llama_get_memory(ctx.get()), true);
    if (batched) {
      b.n_tokens = 0;
      for (int s = 0; s < kBatchRecords; ++s) add(s, records[static_cast<std::size_t>(s)]);
      if (llama_decode(ctx.get(), b) != 0) std::abort();
    } else {
      for (const auto& ids : records) {
        llama_memory_clear(llama_get_memory(ctx.get()), true);
        b.n_tokens = 0;
        add(0, ids);
        if (llama_decode(ctx.get(), b) != 0) std::abort();
      }
    }
  }
  llama_batch_free(b);
  set_counters(state, static_cast<std::size_t>(total));
}

BENCHMARK(BM_raw_batch)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_batching)->Arg(1)->Arg(kBatchRecords)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK(BM_stop)->Arg(1)->Arg(2)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_fairness)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

constexpr int kStates[] = {60, 1800};
BENCHMARK(BM_release_compute_memory)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_prefill)->Arg(kStates[0])->Arg(kStates[1])->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_prefill_llama_defaults)
    ->Arg(kStates[0])
    ->Arg(kStates[1])
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_prefill_llama_tools)
    ->Arg(kStates[0])
    ->Arg(kStates[1])
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_hidden_states)->Arg(kStates[0])->Arg(kStates[1])->Unit(benchmark::kMillisecond);
BENCHMARK(BM_decision)->Arg(kStates[0])->Arg(kStates[1])->Unit(benchmark::kMillisecond);
BENCHMARK(BM_decision_default)->Arg(kStates[0])->Arg(kStates[1])->Unit(benchmark::kMillisecond);

/// Collects each run's real time per iteration so the ratios can be printed after the table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    // With --benchmark_repetitions the median stands for the benchmark (the other aggregates
    // and, unless --benchmark_report_aggregates_only, the single runs come too).
    for (const Run& r : runs) {
      const bool aggregate = r.run_type == Run::RT_Aggregate;
      if (aggregate && r.aggregate_name != "median") continue;
      const std::string name = r.run_name.str();
      if (aggregate || !medians_.contains(name)) times_[name] = r.GetAdjustedRealTime();
      if (aggregate) medians_.insert(name);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nratios (same record, same run):\n");
    std::printf("%-8s %18s %14s %24s %22s %30s\n", "state", "hidden_states/raw", "decision/raw",
                "decision/llama-defaults", "decision/llama-tools", "decision_default/llama-tools");
    // A ratio whose two runs were not both selected prints as "-".
    auto ratio = [](double a, double b) {
      char out[32] = "-";
      if (a > 0 && b > 0) std::snprintf(out, sizeof out, "%.3f", a / b);
      return std::string(out);
    };
    for (int s : kStates) {
      const double raw = time_of("BM_raw_prefill", s);
      const double defaults = time_of("BM_raw_prefill_llama_defaults", s);
      const double tools = time_of("BM_raw_prefill_llama_tools", s);
      const double decision = time_of("BM_decision", s);
      if (raw <= 0 && defaults <= 0 && tools <= 0) continue;
      std::printf("%-8d %18s %14s %24s %22s %30s\n", s,
                  ratio(time_of("BM_hidden_states", s), raw).c_str(), ratio(decision, raw).c_str(),
                  ratio(decision, defaults).c_str(), ratio(decision, tools).c_str(),
                  ratio(time_of("BM_decision_default", s), tools).c_str());
    }
    const double cold = times_.count("BM_new_questions_cold") ? times_["BM_new_questions_cold"] : 0;
    const double warm = times_.count("BM_new_questions_warm") ? times_["BM_new_questions_warm"] : 0;
    const double serial = time_of("BM_raw_batch", 0);
    for (int arg : {1, 2}) {
      const double batched = time_of("BM_raw_batch", arg);
      if (serial > 0 && batched > 0) {
        std::printf(
            "llama.cpp, %d ~300-token records in one llama_decode (ubatch %s) vs one by "
            "one: throughput x%.3f (issue 11 target for batching: >= 1.3)\n",
            kBatchRecords, arg == 1 ? "all" : "512", serial / batched);
      }
    }
    const double one_by_one = time_of("BM_batching", 1);
    const double together = time_of("BM_batching", kBatchRecords);
    if (one_by_one > 0 && together > 0) {
      std::printf(
          "batching, %d distinct ~300-token requests through the queue, --parallel %d vs 1: "
          "throughput x%.3f (target >= 1.3)\n",
          kBatchRecords, kBatchRecords, one_by_one / together);
    }
    for (int arg : {0, 2}) {
      const double alone = time_of("BM_fairness", arg);
      const double beside = time_of("BM_fairness", arg + 1);
      if (alone > 0 && beside > 0) {
        std::printf(
            "fairness (%s), a short request sent while a long one runs: latency / alone %.3f "
            "(target <= 2)\n",
            arg == 0 ? "--parallel 1, the long prefill pauses" : "--parallel 2, batched",
            beside / alone);
      }
    }
    if (cold > 0 && warm > 0) {
      std::printf(
          "\nstate cache, same %d-word state, new questions: warm/cold %.3f (target <= 0.2)\n",
          kReuseWords, warm / cold);
    }
  }

 private:
  double time_of(const char* name, int arg) const {
    char key[96];
    std::snprintf(key, sizeof key, "%s/%d", name, arg);
    // "NAME/ARG", or "NAME/ARG/iterations:N/manual_time" and the like.
    for (const auto& [name_of_run, time] : times_) {
      if (name_of_run == key || name_of_run.starts_with(std::string(key) + "/")) return time;
    }
    return 0.0;
  }
  std::map<std::string, double> times_;
  std::set<std::string> medians_;  ///< benchmarks whose time is their repetitions' median
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("model: %s\n", model_dir().string().c_str());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
