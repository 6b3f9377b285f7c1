// `clef ask`: one decision from the command line.
#include <filesystem>
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
#include "vision/image_source.hpp"

namespace clef::cli {
namespace {

struct AskOptions {
  EngineOptions engine;
  std::string request_path;
  std::vector<std::string> image_paths;  ///< --image, in order
};

/// Appends each --image file to the request's `images` as a data URI (after any the request
/// already has), so local files take the same path as images sent to the server.
void append_image_files(json::Value& body, const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  if (!body.is_object()) throw invalid_request("the request must be a JSON object");
  auto& members = body.members();
  json::Value* images = nullptr;
  for (auto& [key, value] : members) {
    if (key == "images") images = &value;
  }
  if (images == nullptr) {
    members.emplace_back("images", json::Value::array());
    images = &members.back().second;
  } else if (images->is_null()) {
    *images = json::Value::array();
  } else if (!images->is_array()) {
    throw invalid_request("the request's images is not an array, so --image cannot add to it",
                          "images");
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    images->items().push_back(json::Value::string(
        vision::image_file_data_uri(paths[i], vision::DecodeLimits{}, "image")));
  }
}

std::string read_request(const std::string& path) {
  if (path == "-") {
    return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw invalid_request("request file '" + path + "' is not a readable file", "request");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_request("cannot read request file '" + path + "'", "request");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int run_ask(const AskOptions& options) {
  runtime::EngineConfig config = options.engine.to_config();
  config.backbone.on_progress = progress_printer("backbone", options.engine.verbose);
  json::Value body = json::parse(read_request(options.request_path));
  append_image_files(body, options.image_paths);
  auto engine = runtime::make_engine(config);
  // The server's path: prepare (validate, encode, images), then decide.
  const runtime::PreparedRequest prepared = engine->prepare(body);
  const runtime::Decision d = engine->decide(prepared);
  if (options.engine.verbose) {
    std::cerr << "record: " << json::dumps_unsorted(runtime::record_trace(prepared)) << "\n";
    std::cerr << "timings (ms): tokenize " << d.timings.tokenize_ms << ", vision "
              << d.timings.vision_ms << ", backbone " << d.timings.backbone_ms << ", head "
              << d.timings.head_ms << ", total " << d.timings.total_ms << "\n";
  }
  std::cout << d.body << "\n";
  return 0;
}

}  // namespace

void add_ask_command(CLI::App& app, ExitCode& exit_code) {
  auto options = std::make_shared<AskOptions>();
  CLI::App* cmd = app.add_subcommand("ask", "decide one SystemOne request and print the response");
  options->engine.add_to(*cmd);
  options->engine.add_model_positional(*cmd);
  cmd->add_option("-r,--request", options->request_path, "request JSON file ('-' = stdin)")
      ->required();
  cmd->add_option("--image", options->image_paths,
                  "image file (PNG, JPEG or WebP) added to the request's images; repeatable")
      ->check(CLI::ExistingFile);
  cmd->callback([options, &exit_code] { exit_code.value = run_ask(*options); });
}

}  // namespace clef::cli
