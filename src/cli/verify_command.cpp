// `clef verify`: does this engine, with these files, on this machine, give the model authors'
// answers? Decides every run of the oracle fixture and reports parity (eval/).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "artifact/reference.hpp"
#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/text_file.hpp"
#include "eval/fixture.hpp"
#include "eval/parity.hpp"
#include "eval/record_fixture.hpp"
#include "eval/verify.hpp"
#include "eval/verify_report.hpp"
#include "gguf/gguf_file.hpp"
#include "head/head_config.hpp"
#include "info/backbone_info.hpp"
#include "json/render.hpp"
#include "llama.h"
#include "runtime/make_engine.hpp"
#include "util/digest.hpp"
#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace clef::cli {
namespace {

/// The authors' fixture shipped with the binary (oracle/coreai/fixture.json beside it in the build
/// tree, share/clef/ in an install), else the source tree's.
std::string default_fixture() {
  if (const auto shipped = util::shipped_data("oracle/coreai/fixture.json"))
    return shipped->string();
  return CLEF_DEFAULT_FIXTURE;
}

struct VerifyCommandOptions {
  EngineOptions engine;
  std::string fixture = default_fixture();
  std::size_t limit = 0;
  std::vector<std::string> arms;
  std::vector<std::string> sources;
  std::string json_path;
  std::string write_fixture;  ///< record this engine's readout here instead of verifying
  eval::ParityBar bar;
  bool progress = false;
};

/// "path sha256 bytes" of a model file.
std::string file_line(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return path + " (unreadable)";
  return path + " sha256:" + util::sha256_file(path) + " " + std::to_string(size) + " bytes";
}

std::string tensor_types(const std::string& backbone) {
  try {
    const gguf::GgufFile file(backbone, true);
    const info::BackboneInfo bi = info::read_backbone_info(file);
    std::string out;
    for (const auto& [type, n] : bi.tensor_types) {
      out += (out.empty() ? "" : ", ") + type + " x" + std::to_string(n);
    }
    return out;
  } catch (const std::exception& e) {
    return std::string("(not read: ") + e.what() + ")";
  }
}

std::string clock(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  char b[32];
  std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return b;
}

/// A bar of the verdict: a number in 0..1 (a NaN bar passed every run: a reported input).
CLI::Validator probability_bound() {
  return finite_range(0, 1);
}

int run_verify(const VerifyCommandOptions& options) {
  if (!options.json_path.empty()) check_writable(options.json_path, "json");  // before the runs
  const eval::Fixture fixture = eval::load_fixture(options.fixture);
  runtime::EngineConfig config = options.engine.loading_config();
  config.state_cache_mb = 0;  // every run decided cold, as a client's first request would be

  eval::VerifySetup setup;
  setup.clef_version = kClefVersion;
  setup.fixture = options.fixture;
  std::cerr << "hashing the model files...\n";
  for (const std::string& f :
       {config.backbone_path, config.head_path, config.head_config_path, config.mmproj_path}) {
    if (!f.empty()) setup.model_files.push_back(file_line(f));
  }
  setup.quantization = tensor_types(config.backbone_path);
  if (!config.head_config_path.empty()) {  // a head inside the GGUF is named by clef info
    const artifact::HeadMatch match =
        artifact::match_published_head(head::read_head_config(config.head_config_path));
    setup.head = artifact::describe_head_config(match);
    setup.clef_flash_head = !match.exact || match.head == &artifact::published_heads()[0];
  }
  setup.backend = config.backbone.gpu_layers == 0 || !llama_supports_gpu_offload()
                      ? "CPU"
                      : "GPU (--gpu-layers " + std::to_string(config.backbone.gpu_layers) + ")";
  setup.threads = backbone::resolved_threads(config.backbone);

  auto engine = runtime::make_engine(config);
  const bool show = options.progress || ::isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  eval::VerifyOptions vo;
  vo.limit = options.limit;
  vo.arms = options.arms;
  vo.sources = options.sources;
  vo.on_run = [&](std::size_t done, std::size_t total, const eval::RunParity& r) {
    if (!show) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    char line[256];
    std::snprintf(line, sizeof line, "[%zu/%zu] %-28s max|dp| %.6f  elapsed %s  eta %s\n", done,
                  total, (r.id + "/" + r.arm).c_str(), r.max_dp, clock(elapsed).c_str(),
                  clock(eta).c_str());
    std::cerr << line;
  };
  if (!options.write_fixture.empty()) {
    const std::size_t n = eval::record_fixture(engine, fixture, vo, options.write_fixture);
    std::cout << "wrote " << n << " runs of this engine's readout to " << options.write_fixture
              << "\n";
    return 0;
  }
  const eval::VerifyResult result = eval::verify(engine, fixture, vo);
  const eval::ParitySummary summary = eval::summarize(result.runs, options.bar);
  std::cout << eval::format_report(setup, result, summary, options.bar);
  if (!options.json_path.empty()) {
    write_text_file(
        options.json_path,
        json::dumps_unsorted(eval::report_json(setup, result, summary, options.bar)) + "\n",
        "json");
  }
  return summary.pass ? 0 : 1;
}

}  // namespace

void add_verify_command(CLI::App& cmd, ExitCode& exit_code) {
  const auto options = add_engine_options<VerifyCommandOptions>(cmd, exit_code, run_verify);
  cmd.add_option("--fixture", options->fixture,
                 "oracle fixture (coreai-clef-flash-fixtures/1); images are read from images/ "
                 "beside it")
      ->capture_default_str();
  cmd.add_option("--limit", options->limit, "decide at most N runs (0: all)")
      ->check(CLI::Range(0, 1000000000));
  cmd.add_option("--arm", options->arms, "only this arm (text, g256, g448, native); repeatable");
  cmd.add_option("--source", options->sources,
                 "only this source (own_text, own_json, own_image, semif_authored144, ...); "
                 "repeatable");
  cmd.add_option("--json", options->json_path, "also write the report as JSON to FILE");
  cmd.add_option("--max-dp", options->bar.max_dp, "bar: largest |dp| allowed (0..1)")
      ->capture_default_str()
      ->check(probability_bound());
  cmd.add_option("--mean-dp", options->bar.mean_dp, "bar: largest mean |dp| allowed (0..1)")
      ->capture_default_str()
      ->check(probability_bound());
  cmd.add_option("--margin", options->bar.margin,
                 "argmax must agree where the reference's top-2 margin is above this (0..1)")
      ->capture_default_str()
      ->check(probability_bound());
  cmd.add_option("--argmax-rate", options->bar.argmax_rate,
                 "bar: share of those questions whose argmax must agree (0..1)")
      ->capture_default_str()
      ->check(probability_bound());
  cmd.add_flag("--progress", options->progress, "a line per run on stderr (default: on a tty)");
  cmd.add_option("--write-fixture", options->write_fixture,
                 "instead of verifying, write this engine's own readout of the selected runs as "
                 "a fixture (images copied beside it), to verify another machine, backend or "
                 "quantization against this one");
}

}  // namespace clef::cli
