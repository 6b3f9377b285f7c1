// `clef calibrate`: are the probabilities calibrated for my traffic? Decides a file of labeled
// requests, fits a temperature per question type (Platt scaling for noul), reports accuracy, log
// loss, Brier score and ECE before and after on held-out folds, and writes the calibration that
// `clef serve --calibration FILE` applies.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/option_kinds.hpp"
#include "cli/text_file.hpp"
#include "eval/calibrate.hpp"
#include "eval/labeled_set.hpp"
#include "json/render.hpp"
#include "runtime/make_engine.hpp"
#include "util/error.hpp"

namespace clef::cli {
namespace {

struct CalibrateCommandOptions {
  EngineOptions engine;
  std::string data;
  std::string out;
  std::string plot;
  std::string json_path;
  bool force = false;
  eval::CalibrateOptions fit;
};

int run_calibrate(CalibrateCommandOptions options) {
  // Before the run, which may take hours on a real model (a reported input: a bad --out was found
  // only after every request was decided).
  check_writable(options.out, "out");
  if (!options.plot.empty()) check_writable(options.plot, "plot");
  if (!options.json_path.empty()) check_writable(options.json_path, "json");
  const eval::LabeledSet data = eval::load_labeled_set(options.data);
  runtime::EngineConfig config = options.engine.loading_config();
  config.calibration_path.clear();  // fitted on the model's own logits
  auto engine = runtime::make_engine(config);
  if (::isatty(STDERR_FILENO) != 0) {
    options.fit.on_request = [](std::size_t done, std::size_t total) {
      std::cerr << "\rdecided " << done << "/" << total << std::flush;
      if (done == total) std::cerr << "\n";
    };
  }
  const eval::CalibrateResult result = eval::calibrate(engine, data, options.fit);
  std::cout << eval::format_calibration_report(result);
  if (result.questions == 0) {
    std::cerr << "no labeled question could be used; nothing written\n";
    return 2;
  }
  const std::vector<std::string> warnings = eval::calibration_warnings(result);
  for (const std::string& w : warnings) std::cerr << "clef: warning: " << w << "\n";
  int exit = 0;
  if (warnings.empty() || options.force) {
    write_text_file(options.out, json::dumps_unsorted(result.calibration.to_json()) + "\n", "out");
    std::cout << "\ncalibration written to " << options.out;
    if (warnings.empty()) {
      std::cout << " (apply it with: clef serve --calibration " << options.out << ")\n";
    } else {
      std::cout << " (--force, despite the warnings above: check it before applying it)\n";
    }
  } else {
    std::cerr << "clef: the calibration was not written to " << options.out
              << ": more labeled requests usually help; --force writes it anyway\n";
    exit = 1;
  }
  if (!options.plot.empty()) {
    std::vector<std::pair<std::string, eval::CalibrationMetrics>> series;
    const eval::CalibrationComparison& all = result.comparisons.front();
    series.emplace_back("before", all.before);
    series.emplace_back(result.folds >= 2 ? "after (held out)" : "after (in sample)", all.after);
    write_text_file(options.plot, eval::reliability_svg("reliability, all questions", series),
                    "plot");
    std::cout << "reliability diagram written to " << options.plot << "\n";
  }
  if (!options.json_path.empty()) {
    write_text_file(options.json_path,
                    json::dumps_unsorted(eval::calibration_report_json(result)) + "\n", "json");
  }
  return exit;
}

}  // namespace

void add_calibrate_command(CLI::App& cmd, ExitCode& exit_code) {
  const auto options = add_engine_options<CalibrateCommandOptions>(cmd, exit_code, run_calibrate);
  cmd.add_option("--data", options->data,
                 "labeled requests, JSON Lines: a SystemOne request plus \"gold\": {question id: "
                 "option id | true/false | level index}")
      ->required()
      ->check(CLI::ExistingFile);
  cmd.add_option("-o,--out", options->out, "calibration file to write")->required();
  add_range_option(cmd, "--folds", options->fit.folds,
                   "k of the k-fold held-out measurement (2..100; fewer requests than k: in "
                   "sample)",
                   2, 100);
  add_range_option(cmd, "--min-per-question", options->fit.min_per_question,
                   "a question id with at least this many labels gets its own scaling (0: never)",
                   0, 1000000000);
  cmd.add_option("--plot", options->plot, "write a reliability diagram (SVG) to FILE");
  cmd.add_option("--json", options->json_path, "also write the report as JSON to FILE");
  cmd.add_flag("--force", options->force,
               "write the calibration even when the data are too few, a temperature ends at its "
               "bound, or the held-out fit is worse than none (otherwise: a warning, nothing "
               "written, exit 1)");
}

}  // namespace clef::cli
