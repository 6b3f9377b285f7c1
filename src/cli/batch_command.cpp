// `clef batch IN.jsonl OUT.jsonl`: many requests, against a local model or HTTP endpoints (e.g.
// the HAProxy front end of replicas, deploy/haproxy), resumable, with a per-line record.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "batch/batch_input.hpp"
#include "batch/batch_output.hpp"
#include "batch/batch_runner.hpp"
#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/option_kinds.hpp"
#include "json/parse.hpp"
#include "runtime/make_engine.hpp"
#include "util/error.hpp"
#include "util/text_lines.hpp"

namespace clef::cli {
namespace {

struct BatchCommandOptions {
  EngineOptions engine;
  std::string in;
  std::string out;
  std::vector<std::string> endpoints;
  std::string api_key;
  std::string ca_cert;
  int retries = 8;
  int timeout_s = 600;
  bool resume = false;
  batch::BatchOptions run;
};

int run_batch_command(BatchCommandOptions options) {
  if (!options.endpoints.empty()) {
    // The servers decide: a local model's options would be ignored without a word.
    if (const std::vector<std::string> local = options.engine.given_model_options();
        !local.empty()) {
      std::string names;
      for (const std::string& n : local) names += (names.empty() ? "" : ", ") + n;
      throw invalid_request(names + (local.size() == 1 ? " configures" : " configure") +
                                " a local model, which --endpoint does not load (the servers "
                                "decide with their own): drop " +
                                (local.size() == 1 ? "it" : "them") + ", or --endpoint",
                            "endpoint");
    }
  }
  const std::string text = util::read_lines_file(options.in, json::ParseLimits{}.max_bytes, "in");
  const std::vector<batch::BatchItem> items = batch::parse_batch_input(text);

  std::error_code ec;
  if (std::filesystem::equivalent(options.in, options.out, ec)) {
    throw invalid_request("the output must not be the input (" + options.out + ")", "out");
  }
  const bool out_has_records = std::filesystem::file_size(options.out, ec) > 0 && !ec;
  if (out_has_records && !options.resume) {
    throw invalid_request(options.out +
                              " already has records: --resume to go on where it stopped "
                              "(nothing is decided twice), or remove it",
                          "out");
  }
  if (options.resume) {
    batch::drop_retryable_records(options.out);
    batch::check_resumed_records(options.out, items);
  }
  const std::set<int> done = options.resume ? batch::answered_lines(options.out) : std::set<int>{};

  std::optional<runtime::Engine> engine;
  std::unique_ptr<batch::Sender> sender;
  if (!options.endpoints.empty()) {
    sender = std::make_unique<batch::HttpSender>(options.endpoints, options.retries,
                                                 std::chrono::seconds(options.timeout_s),
                                                 options.api_key, options.ca_cert);
  } else {
    engine = runtime::make_engine(options.engine.loading_config());
    sender = std::make_unique<batch::LocalSender>(*engine);
  }
  if (::isatty(STDERR_FILENO) != 0) {
    const auto start = std::chrono::steady_clock::now();
    options.run.on_progress = [start](std::size_t done_now, std::size_t total, std::size_t errors) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double rate = s > 0 ? static_cast<double>(done_now) / s : 0;
      const double eta = rate > 0 ? static_cast<double>(total - done_now) / rate : 0;
      std::fprintf(stderr, "\r%zu/%zu  %.1f/s  eta %.0f s  errors %zu   ", done_now, total, rate,
                   eta, errors);
      if (done_now == total) std::fprintf(stderr, "\n");
    };
  }
  const batch::BatchSummary summary =
      batch::run_batch(items, done, *sender, options.out, options.run);
  std::cout << batch::format_summary(summary);
  // Every line has its record; lines no server decided make the run unfinished (--resume).
  const auto undecided = summary.by_status.count(0) ? summary.by_status.at(0) : 0;
  const auto unauthorized = summary.by_status.count(401) ? summary.by_status.at(401) : 0;
  if (unauthorized > 0) {
    std::cerr << unauthorized
              << " line(s) were refused for their API key (401: --api-key or CLEF_API_KEY "
                 "missing or wrong); --resume tries them again\n";
  }
  if (summary.setup_errors > 0) {
    std::cerr << summary.setup_errors
              << " line(s) cannot be decided as the run is set up (not retried): "
              << summary.first_setup_error << "\n";
  }
  if (undecided > summary.setup_errors) {
    std::cerr << undecided << " line(s) got no answer from any server; --resume tries them again\n";
  }
  // Lines a server answered with an error of its own (the request is wrong, or the server failed
  // on it) have their records, and --resume does not send them again (it retries 0, 401, 429
  // and 503 only: batch_output.cpp); the run still did not decide them, so it does not exit 0.
  std::size_t refused = 0;
  for (const auto& [status, count] : summary.by_status) {
    if (status >= 400 && status != 401 && status != 429 && status != 503) refused += count;
  }
  if (refused > 0) {
    std::cerr << refused
              << " line(s) got an error answer (their records in OUT say why; --resume does not "
                 "send them again)\n";
  }
  // 1: the run is unfinished (--resume goes on); 3: every line has its record, some of them an
  // error answer; 0: every line decided.
  if (undecided > 0 || unauthorized > 0 || summary.setup_errors > 0) return 1;
  return refused > 0 ? 3 : 0;
}

}  // namespace

void add_batch_command(CLI::App& cmd, ExitCode& exit_code) {
  const auto options = add_engine_options<BatchCommandOptions>(cmd, exit_code, run_batch_command);
  cmd.add_option("in", options->in, "input JSONL")->required()->check(CLI::ExistingFile);
  cmd.add_option("out", options->out, "output JSONL (appended with --resume)")->required();
  // One URL per --endpoint: a repeatable vector option would otherwise swallow IN and OUT after
  // it (`clef batch --endpoint URL IN OUT`).
  cmd.add_option("--endpoint", options->endpoints,
                 "a clef server or balancer, e.g. http://127.0.0.1:8080 (repeatable; without it "
                 "the local model of --model-dir/--model decides)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_option("--api-key", options->api_key,
                 "send this key to the --endpoint servers (Authorization: Bearer KEY); the "
                 "environment's CLEF_API_KEY when not given")
      ->envname("CLEF_API_KEY");
  cmd.add_option("--ca-cert", options->ca_cert,
                 "verify https endpoints against this PEM CA or certificate (a private CA, a "
                 "self-signed server) instead of the system's CAs")
      ->check(CLI::ExistingFile);
  add_range_option(cmd, "--concurrency", options->run.concurrency, "requests in flight at once", 1,
                   1024);
  cmd.add_flag("--ordered", options->run.ordered, "write records in input order");
  cmd.add_flag("--resume", options->resume,
               "skip the lines OUT already has a record for and append the rest");
  add_range_option(cmd, "--retries", options->retries,
                   "retries of a line after a connection failure, 429 or 503 (with backoff, on "
                   "the next endpoint)",
                   0, 100);
  add_range_option(cmd, "--timeout", options->timeout_s,
                   "seconds to wait for one answer before the attempt counts as failed", 1, 86400);
}

}  // namespace clef::cli
