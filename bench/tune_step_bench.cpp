// `clef tune`'s head step against the head's forward pass (docs/performance.md, "clef tune"):
// for one record of `--tokens` rows on a head of the published shape (clef-flash's: hidden 4096,
// width 1024, 121.8M parameters; random weights), the median time of
//   forward   JointSchemaHead::forward (what serving runs),
//   step      HeadTrainer::accumulate (forward + backward) + HeadTrainer::step (clip + AdamW),
//   batch     HeadTrainer::accumulate of --batch copies of the record, in graphs of up to
//             TuneSettings::graph_rows rows as clef tune runs a batch, + one step,
// their ratios (each run times them one after another; the median of the runs' ratios), the
// training records/s once the rows are kept (a batch in one graph + 1 step),
// and the process's peak RSS against the trainer's plan (4 copies of the head in f32).
//
//   build/bench/clef_tune_step_bench [--tokens 1000] [--threads 2] [--runs 5] [--hidden 4096]
//   [--batch 8]

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "artifact/reference.hpp"
#include "head/head_weights.hpp"
#include "head/joint_schema_head.hpp"
#include "testmodel/head_writer.hpp"
#include "tune/head_trainer.hpp"
#include "tune/tune_run.hpp"
#include "util/byte_size.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t tokens = 1000;
  int threads = 2;
  int runs = 5;
  std::int64_t hidden_size = 4096;
  int batch_records = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tokens") tokens = std::stoll(argv[i + 1]);
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
    if (flag == "--runs") runs = std::stoi(argv[i + 1]);
    if (flag == "--hidden") hidden_size = std::stoll(argv[i + 1]);
    if (flag == "--batch") batch_records = std::stoi(argv[i + 1]);
  }
  using namespace clef;
  head::HeadConfig config = artifact::published_heads()[0].config;
  config.hidden_size = hidden_size;
  const std::string dir = "/tmp/clef-tune-step-bench";
  std::filesystem::create_directories(dir);
  testmodel::write_head(dir, config, 11, head::SafetensorsDtype::f32);
  const head::HeadWeights weights = head::HeadWeights::load_dir(dir);
  std::size_t params = 0;
  for (const auto& [name, t] : weights.tensors()) params += t.values.size();

  // One record: three questions (noul 2, choice 5, score 5 options) at the end of the record,
  // as encode_record places the schema after the state.
  std::mt19937 rng(3);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<float> hidden(static_cast<std::size_t>(tokens * hidden_size));
  for (float& x : hidden) x = n01(rng);
  std::vector<head::HeadQuestion> questions;
  std::int64_t at = tokens - 80;
  for (const auto& [type, options] : {std::pair{0, 2}, std::pair{1, 5}, std::pair{2, 5}}) {
    head::HeadQuestion q;
    q.type = type;
    q.question = {at, at + 6};
    at += 7;
    for (int o = 0; o < options; ++o) {
      q.options.push_back({at, at + 3});
      at += 4;
    }
    questions.push_back(q);
  }
  std::vector<float> lexical(12 * static_cast<std::size_t>(hidden_size));
  for (float& x : lexical) x = 0.05f * n01(rng);
  const std::vector<std::vector<float>> targets = {
      {1, 0}, {0, 0, 1, 0, 0}, {0.1f, 0.2f, 0.4f, 0.2f, 0.1f}};
  const tune::HeadExample example{hidden, tokens, questions, lexical, targets};

  head::JointSchemaHead served(weights, threads);
  tune::HeadTrainer trainer(weights, threads);
  // A batch as clef tune runs it: its records in graphs of up to TuneSettings::graph_rows rows
  // (HeadTrainer::accumulate over a span), then one step.
  const std::vector<tune::HeadExample> batch_examples(static_cast<std::size_t>(batch_records),
                                                      example);
  const std::vector<double> batch_weights(batch_examples.size(), 1.0 / batch_records);
  const std::int64_t graph_rows = tune::TuneSettings{}.graph_rows;
  const std::size_t per_graph =
      static_cast<std::size_t>(std::max<std::int64_t>(1, graph_rows / tokens));
  const tune::AdamWSettings adamw{1e-5, 0.9, 0.999, 1e-8, 0.0};

  // Each run times all of them one after another, so that a run's ratios compare times taken
  // side by side (a shared machine's load moves between runs); the first run warms up.
  std::vector<double> forward_ms, accumulate_ms, optimizer_ms, batch_ms, single_ratio, share_ratio;
  for (int r = 0; r <= runs; ++r) {
    auto t = Clock::now();
    served.forward(hidden, tokens, questions, lexical);
    const double fwd = ms_since(t);
    t = Clock::now();
    trainer.accumulate(example, 1.0);
    const double acc = ms_since(t);
    t = Clock::now();
    trainer.step(adamw, 1.0);
    const double opt = ms_since(t);
    t = Clock::now();
    for (std::size_t first = 0; first < batch_examples.size(); first += per_graph) {
      const std::size_t n = std::min(per_graph, batch_examples.size() - first);
      trainer.accumulate(std::span(batch_examples).subspan(first, n),
                         std::span(batch_weights).subspan(first, n));
    }
    const double bat = ms_since(t);
    trainer.step(adamw, 1.0);
    if (r == 0) continue;
    forward_ms.push_back(fwd);
    accumulate_ms.push_back(acc);
    optimizer_ms.push_back(opt);
    batch_ms.push_back(bat);
    single_ratio.push_back((acc + opt) / fwd);
    share_ratio.push_back((bat + opt) / batch_records / fwd);
  }
  const double fwd = median(forward_ms);
  const double acc = median(accumulate_ms);
  const double opt = median(optimizer_ms);
  const double bat = median(batch_ms);
  const double per_record = (bat + opt) / batch_records;
  const auto [low, high] = std::minmax_element(share_ratio.begin(), share_ratio.end());
  const std::uint64_t plan = static_cast<std::uint64_t>(params) * 4 * 4;
  std::printf(
      "head: hidden %lld, width %lld, %zu parameters; record: %lld tokens, 12 options; "
      "%d threads; median of %d runs\n",
      static_cast<long long>(config.hidden_size), static_cast<long long>(config.width), params,
      static_cast<long long>(tokens), threads, runs);
  std::printf("forward (serving)                        %8.1f ms\n", fwd);
  std::printf("forward + backward, one record           %8.1f ms\n", acc);
  std::printf("clip + AdamW step                        %8.1f ms\n", opt);
  std::printf("one record's step (fwd + bwd + AdamW)    %8.1f ms = %.2f x the forward\n", acc + opt,
              median(single_ratio));
  std::printf("forward + backward, %d records (%zu a graph) %8.1f ms (%.1f ms a record)\n",
              batch_records, std::min(per_graph, batch_examples.size()), bat, bat / batch_records);
  std::printf(
      "a record's share of a batch's step       %8.1f ms = %.2f x the forward (runs %.2f-%.2f)\n",
      per_record, median(share_ratio), *low, *high);
  std::printf("training records/s, batch %d              %8.2f (its graphs + 1 step)\n",
              batch_records, 1000.0 / per_record);
  std::printf(
      "peak RSS %s; the trainer's plan: 4 x %zu x 4 B = %s (weights, gradients, m, v), "
      "plus the served head's copy %s\n",
      util::human_bytes(peak_rss_bytes()).c_str(), params, util::human_bytes(plan).c_str(),
      util::human_bytes(static_cast<std::uint64_t>(params) * 4).c_str());
  return 0;
}
