// `clef ask`: one decision from the command line.
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "runtime/engine.hpp"
#include "util/error.hpp"

namespace clef::cli {
namespace {

struct AskOptions {
  EngineOptions engine;
  std::string request_path;
};

std::string read_request(const std::string& path) {
  if (path == "-") {
    return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_request("cannot read request file '" + path + "'", "request");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int run_ask(const AskOptions& options) {
  runtime::EngineConfig config = options.engine.to_config();
  config.backbone.on_progress = progress_printer("backbone", options.engine.verbose);
  const json::Value body = json::parse(read_request(options.request_path));
  auto engine = runtime::make_engine(config);
  const runtime::Decision d =
      options.engine.verbose ? engine->decide_traced(body) : engine->decide(body);
  if (options.engine.verbose) {
    std::cerr << "record: " << json::dumps_unsorted(d.trace) << "\n";
    std::cerr << "timings (ms): tokenize " << d.timings.tokenize_ms << ", backbone "
              << d.timings.backbone_ms << ", head " << d.timings.head_ms << ", total "
              << d.timings.total_ms << "\n";
  }
  std::cout << d.body << "\n";
  return 0;
}

}  // namespace

void add_ask_command(CLI::App& app, ExitCode& exit_code) {
  auto options = std::make_shared<AskOptions>();
  CLI::App* cmd = app.add_subcommand("ask", "decide one SystemOne request and print the response");
  options->engine.add_to(*cmd);
  cmd->add_option("-r,--request", options->request_path, "request JSON file ('-' = stdin)")
      ->required();
  cmd->callback([options, &exit_code] { exit_code.value = run_ask(*options); });
}

}  // namespace clef::cli
