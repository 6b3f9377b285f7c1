// Issue 15's GPU numbers for one model directory, side by side in one run:
//  - the whole decision at ~1,000 / 4,000 / 16,000 tokens against llama.cpp's raw prefill of the
//    same ids (its defaults: n_batch 2048, n_ubatch 512, all layers on the same device), and the
//    ratio decision / raw;
//  - the device memory the engine holds after the longest decision (weights, KV, compute
//    buffers), as the device reports free memory before and after;
//  - throughput with 1 / 8 / 32 clients sending ~500-token requests at once through the server's
//    DecisionQueue, deciding one record at a time and --parallel N (default 8) together
//    (continuous batching), against one client one at a time.
// It runs on the CPU too (--device cpu), which is how it is tested without a GPU.
// --one-model: for a model that fits the machine only once (Clef 27B's shape on a 24 GB CPU): the
// decisions first, then the engine is freed and llama.cpp's raw prefills of the same ids run; no
// device memory or throughput figures.
//
//   clef_gpu_bench MODEL_DIR [--device auto|cpu|CUDA0] [--lengths 1000,4000,16000]
//                  [--clients 1,8,32] [--parallel 8] [--chunk-tokens N] [--reps 3]
//                  [--one-model] [--json FILE]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backbone/backbone.hpp"
#include "backbone/llama_handles.hpp"
#include "bench_requests.hpp"
#include "device/device.hpp"
#include "json/parse.hpp"
#include "runtime/make_engine.hpp"
#include "runtime/loop/decision_queue.hpp"
#include "util/byte_size.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

/// A request whose record has about `tokens` tokens: the words solved from two measured points
/// (the record is the questions' fixed tokens plus about the same tokens per word), then nudged.
std::string body_with_tokens(const clef::runtime::Engine& engine, int tokens, int variant = 0) {
  auto count = [&](int words) {
    return engine
        .prepare(clef::json::parse(
            clef::bench::request_with_state(words, clef::bench::kCardQuestions, variant)))
        .input_tokens();
  };
  const int base = count(1);
  const double per_word = (count(201) - base) / 200.0;
  int words = std::max(1, static_cast<int>((tokens - base) / per_word) + 1);
  for (int i = 0; i < 4; ++i) {
    const int got = count(words);
    if (std::abs(got - tokens) * 100 <= tokens) break;
    words = std::max(1, words + static_cast<int>((tokens - got) / per_word));
  }
  return clef::bench::request_with_state(words, clef::bench::kCardQuestions, variant);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Options {
  std::string model_dir;
  std::string device = "auto";
  std::vector<int> lengths = {1000, 4000, 16000};
  std::vector<int> clients = {1, 8, 32};
  int parallel = 8;      // records prefilled together in the throughput runs (--parallel)
  int chunk_tokens = 0;  // 0: the engine's default
  int reps = 3;
  bool one_model = false;  // --one-model: the engine and the raw model one after the other
  std::string json_path;
};

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device") {
      o.device = value();
    } else if (a == "--lengths") {
      o.lengths = int_list(value());
    } else if (a == "--clients") {
      o.clients = int_list(value());
    } else if (a == "--parallel") {
      o.parallel = std::max(1, std::stoi(value()));
    } else if (a == "--chunk-tokens") {
      o.chunk_tokens = std::stoi(value());
    } else if (a == "--reps") {
      o.reps = std::max(1, std::stoi(value()));
    } else if (a == "--one-model") {
      o.one_model = true;
    } else if (a == "--json") {
      o.json_path = value();
    } else if (o.model_dir.empty() && a[0] != '-') {
      o.model_dir = a;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.model_dir.empty()) {
    std::fprintf(stderr,
                 "usage: clef_gpu_bench MODEL_DIR [--device D] [--lengths 1000,4000,16000] "
                 "[--clients 1,8,32] [--parallel N] [--chunk-tokens N] [--reps N] "
                 "[--one-model] [--json FILE]\n");
    std::exit(2);
  }
  return o;
}

/// llama.cpp's raw prefill of `ids` as a plain user runs it: its default batch sizes, every
/// layer on `placement`'s device, logits for the last token.
double raw_prefill_ms(llama_context* ctx, const std::vector<std::int32_t>& ids) {
  llama_memory_clear(llama_get_memory(ctx), true);
  const auto t0 = Clock::now();
  const int n_batch = static_cast<int>(llama_n_batch(ctx));
  llama_batch b = llama_batch_init(n_batch, 0, 1);
  const int total = static_cast<int>(ids.size());
  for (int start = 0; start < total; start += n_batch) {
    const int n = std::min(n_batch, total - start);
    b.n_tokens = n;
    for (int i = 0; i < n; ++i) {
      b.token[i] = ids[static_cast<std::size_t>(start + i)];
      b.pos[i] = start + i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = start + i == total - 1 ? 1 : 0;
    }
    if (llama_decode(ctx, b) != 0) {
      std::fprintf(stderr, "llama_decode failed\n");
      std::exit(1);
    }
  }
  llama_synchronize(ctx);
  llama_batch_free(b);
  return ms_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  clef::backbone::ensure_llama_backend();
  const clef::device::Placement placement = clef::device::resolve(o.device, -1);
  std::printf("device: %s\n", clef::device::describe(placement).c_str());
  const int longest = *std::max_element(o.lengths.begin(), o.lengths.end());

  clef::runtime::EngineConfig config = clef::runtime::EngineConfig::from_model_dir(o.model_dir);
  config.backbone.device = o.device;
  config.backbone.gpu_layers = -1;
  config.backbone.context_size = std::max(4096, longest + 1024);
  if (o.chunk_tokens > 0) config.backbone.chunk_tokens = o.chunk_tokens;
  config.state_cache_mb = 0;  // every decision cold

  std::size_t free_before = 0;
  std::size_t total = 0;
  if (placement.gpu != nullptr) ggml_backend_dev_memory(placement.gpu, &free_before, &total);
  std::optional<clef::runtime::Engine> engine(clef::runtime::make_engine(config));
  std::printf("placement: %s\n", engine->served().placement.c_str());

  // llama.cpp's own context over the same file, on the same device, with its defaults.
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = placement.gpu != nullptr ? -1 : 0;
  static ggml_backend_dev_t no_devices[] = {nullptr};
  mp.devices = placement.gpu != nullptr ? clef::device::as_device_list(placement.gpu) : no_devices;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<std::uint32_t>(config.backbone.context_size);
  cp.n_threads = cp.n_threads_batch = clef::backbone::physical_cores();
  clef::backbone::LlamaModelPtr raw_model;
  clef::backbone::LlamaContextPtr raw_ctx;
  auto load_raw = [&] {
    raw_model.reset(llama_model_load_from_file(config.backbone_path.c_str(), mp));
    if (raw_model) raw_ctx.reset(llama_init_from_model(raw_model.get(), cp));
    if (!raw_model || !raw_ctx) {
      std::fprintf(stderr, "llama.cpp could not load %s\n", config.backbone_path.c_str());
      std::exit(1);
    }
  };
  if (o.one_model) {
    // The decisions of every length first, then the raw prefills of the same ids.
    std::vector<std::vector<std::int32_t>> all_ids;
    std::vector<double> decision_ms;
    for (const int n : o.lengths) {
      const clef::json::Value body = clef::json::parse(body_with_tokens(*engine, n));
      const clef::runtime::PreparedRequest prepared = engine->prepare(body);
      all_ids.emplace_back(prepared.record.ids.begin(), prepared.record.ids.end());
      engine->decide(body);  // warm-up
      std::vector<double> decision;
      for (int r = 0; r < o.reps; ++r) {
        const auto t0 = Clock::now();
        engine->decide(body);
        decision.push_back(ms_since(t0));
      }
      decision_ms.push_back(median(decision));
    }
    engine.reset();
    load_raw();
    std::printf(
        "\n| tokens | decision ms | raw prefill ms | decision / raw |\n|---|---|---|---|\n");
    for (std::size_t i = 0; i < all_ids.size(); ++i) {
      raw_prefill_ms(raw_ctx.get(), all_ids[i]);  // warm-up
      std::vector<double> raw;
      for (int r = 0; r < o.reps; ++r) raw.push_back(raw_prefill_ms(raw_ctx.get(), all_ids[i]));
      const double w = median(raw);
      std::printf("| %zu | %.1f | %.1f | %.3f |\n", all_ids[i].size(), decision_ms[i], w,
                  decision_ms[i] / w);
    }
    return 0;
  }
  load_raw();

  std::string json = "{\"device\": \"" + clef::device::describe(placement) + "\", \"lengths\": [";
  std::printf("\n| tokens | decision ms | raw prefill ms | decision / raw |\n|---|---|---|---|\n");
  std::size_t used_after_longest = 0;
  for (std::size_t li = 0; li < o.lengths.size(); ++li) {
    const int n = o.lengths[li];
    const std::string text = body_with_tokens(*engine, n);
    const clef::json::Value body = clef::json::parse(text);
    const clef::runtime::PreparedRequest prepared = engine->prepare(body);  // owns the ids
    const auto& rec_ids = prepared.record.ids;
    const std::vector<std::int32_t> ids(rec_ids.begin(), rec_ids.end());
    engine->decide(body);  // warm-up
    raw_prefill_ms(raw_ctx.get(), ids);
    std::vector<double> decision, raw;
    for (int r = 0; r < o.reps; ++r) {
      const auto t0 = Clock::now();
      engine->decide(body);
      decision.push_back(ms_since(t0));
      raw.push_back(raw_prefill_ms(raw_ctx.get(), ids));
    }
    const double d = median(decision);
    const double w = median(raw);
    std::printf("| %zu | %.1f | %.1f | %.3f |\n", ids.size(), d, w, d / w);
    std::fflush(stdout);
    json += std::string(li ? ", " : "") + "{\"tokens\": " + std::to_string(ids.size()) +
            ", \"decision_ms\": " + std::to_string(d) +
            ", \"raw_prefill_ms\": " + std::to_string(w) + "}";
    if (n == longest && placement.gpu != nullptr) {
      // The raw context holds its own buffers: measure the engine alone by freeing them first.
      std::size_t free_now = 0;
      raw_ctx.reset();
      raw_model.reset();
      ggml_backend_dev_memory(placement.gpu, &free_now, &total);
      used_after_longest = free_before > free_now ? free_before - free_now : 0;
      std::printf("device memory held by the engine after %zu tokens: %s\n", ids.size(),
                  clef::util::human_bytes(used_after_longest).c_str());
      load_raw();
    }
  }
  json += "], \"engine_device_bytes\": " + std::to_string(used_after_longest);

  // Throughput: clients at once through the server's queue, ~500-token requests, each different,
  // once deciding one record at a time and once `parallel` together (continuous batching).
  raw_ctx.reset();
  raw_model.reset();
  std::vector<std::string> bodies;
  for (int i = 0; i < 64; ++i) bodies.push_back(body_with_tokens(*engine, 500, i + 1));
  engine.reset();
  json += ", \"clients\": [";
  bool first_row = true;
  std::vector<int> parallels = {1};
  if (o.parallel > 1) parallels.push_back(o.parallel);
  double serial_rate = 0;  // one client, one record at a time
  for (const int parallel : parallels) {
    clef::runtime::EngineConfig batch_config = config;
    batch_config.backbone.context_size = 1024;  // the ~500-token requests
    batch_config.backbone.parallel = parallel;
    clef::runtime::DecisionQueue queue(
        [batch_config] { return clef::runtime::make_engine(batch_config); }, 64,
        clef::json::parse(clef::bench::request_with_state(20)));
    queue.start();
    if (!queue.wait_until_ready(std::chrono::minutes(10))) {
      std::fprintf(stderr, "the queue (parallel %d) did not start: %s\n", parallel,
                   queue.load_error().c_str());
      return 1;
    }
    std::printf(
        "\n--parallel %d\n| clients | requests | seconds | requests/s | x serial |\n"
        "|---|---|---|---|---|\n",
        parallel);
    for (const int clients : o.clients) {
      const int requests = std::max(8, clients * 2);
      std::atomic<int> next{0};
      const auto t0 = Clock::now();
      std::vector<std::thread> threads;
      for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&] {
          for (int i = next++; i < requests; i = next++) {
            auto prepared =
                queue.prepare(clef::json::parse(bodies[static_cast<std::size_t>(i) % 64]));
            if (queue.submit(std::move(prepared)).get().status !=
                clef::runtime::DecisionOutcome::Status::decided) {
              std::abort();
            }
          }
        });
      }
      for (auto& t : threads) t.join();
      const double seconds = ms_since(t0) / 1000.0;
      const double rate = requests / seconds;
      if (serial_rate == 0) serial_rate = rate;
      std::printf("| %d | %d | %.2f | %.2f | %.2f |\n", clients, requests, seconds, rate,
                  rate / serial_rate);
      std::fflush(stdout);
      json += std::string(first_row ? "" : ", ") + "{\"parallel\": " + std::to_string(parallel) +
              ", \"clients\": " + std::to_string(clients) +
              ", \"requests_per_s\": " + std::to_string(rate) + "}";
      first_row = false;
    }
    queue.drain();
  }
  json += "]}\n";
  if (!o.json_path.empty()) std::ofstream(o.json_path) << json;
  return 0;
}
