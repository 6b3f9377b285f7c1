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
#include "media/image_source.hpp"
#include "runtime/make_engine.hpp"
#include "runtime/prepare/video_inputs.hpp"
#include "util/error.hpp"

namespace clef::cli {
namespace {

struct AskOptions {
  EngineOptions engine;
  std::string request_path;
  std::vector<std::string> image_paths;  ///< --image, in order
  std::vector<std::string> video_paths;  ///< --video, in order
};

/// Appends `uris` to the request's array `field` ("images" or "videos"; after any it already
/// has), so local files take the same path as media sent to the server.
void append_media(json::Value& body, const std::string& field, std::vector<std::string> uris) {
  if (uris.empty()) return;
  if (!body.is_object()) throw invalid_request("the request must be a JSON object");
  auto& members = body.members();
  json::Value* list = nullptr;
  for (auto& [key, value] : members) {
    if (key == field) list = &value;
  }
  if (list == nullptr) {
    members.emplace_back(field, json::Value::array());
    list = &members.back().second;
  } else if (list->is_null()) {
    *list = json::Value::array();
  } else if (!list->is_array()) {
    throw invalid_request("the request's " + field + " is not an array, so --" +
                              field.substr(0, field.size() - 1) + " cannot add to it",
                          field);
  }
  for (std::string& uri : uris) list->items().push_back(json::Value::string(std::move(uri)));
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
  runtime::EngineConfig config = options.engine.loading_config();
  // One decision, then exit: nothing can reuse a state cache, and keeping one would cut the
  // record's prefill at its snapshot points (more, smaller batches) and copy snapshots, costing
  // time for nothing. A size given explicitly (MiB > 0) still takes one.
  if (config.state_cache_mb < 0) config.state_cache_mb = 0;
  json::Value body = json::parse(read_request(options.request_path));
  std::vector<std::string> images;
  for (const std::string& path : options.image_paths) {
    images.push_back(media::image_file_data_uri(path, media::DecodeLimits{}, "image"));
  }
  append_media(body, "images", std::move(images));
  std::vector<std::string> videos;
  for (const std::string& path : options.video_paths) {
    videos.push_back(runtime::video_file_data_uri(
        path, static_cast<std::size_t>(config.max_video_bytes), "video"));
  }
  append_media(body, "videos", std::move(videos));
  auto engine = runtime::make_engine(config);
  // The server's path: prepare (validate, encode, images), then decide.
  const runtime::PreparedRequest prepared = engine.prepare(body);
  const runtime::Decision d = engine.decide(prepared);
  if (options.engine.verbose) {
    std::cerr << "record: " << json::dumps_unsorted(runtime::record_trace(prepared)) << "\n";
    std::cerr << "timings (ms): tokenize " << d.timings.tokenize_ms << ", vision "
              << d.timings.vision_ms << ", backbone " << d.timings.backbone_ms << ", head "
              << d.timings.head_ms << ", total " << d.timings.total_ms << "\n";
    if (config.state_cache_mb == 0) {
      std::cerr << "state cache: off (one decision; --state-cache-mb MiB keeps one)\n";
    } else {
      std::cerr << "state cache: up to " << config.state_cache_mb << " MiB (--state-cache-mb)\n";
    }
  }
  std::cout << d.body << "\n";
  // What the response body (the reference's bytes) does not say: a cut state, ignored fields.
  if (prepared.record.state_tokens_cut > 0) {
    const request::Request& req = prepared.request;
    // Whose limit cut it: the request's own max_length / max_state_tokens (a reported input got
    // advice about --context-size that changed nothing), or the served context.
    const bool own_limit =
        (req.max_length && *req.max_length < engine.served().context_size) || req.max_state_tokens;
    std::cerr << "clef: note: the state was cut to fit: its last "
              << prepared.record.state_tokens_cut << " tokens were dropped (the record holds "
              << prepared.record.input_tokens() << " tokens; "
              << (own_limit ? "the request's own max_length / max_state_tokens cut it"
                            : "a larger --context-size, or --truncation refuse to refuse instead")
              << ")\n";
  }
  if (!prepared.request.ignored_fields.empty()) {
    // Quoted as JSON strings: a field name may hold spaces, commas or control bytes.
    std::string names;
    for (const std::string& f : prepared.request.ignored_fields) {
      if (!names.empty()) names += ", ";
      json::append_quoted(names, f);
    }
    std::cerr << "clef: note: fields the contract does not know were ignored: " << names
              << " (--unknown-fields refuse to refuse them)\n";
  }
  return 0;
}

}  // namespace

void add_ask_command(CLI::App& cmd, ExitCode& exit_code) {
  const auto options = add_engine_options<AskOptions>(cmd, exit_code, run_ask, true);
  cmd.add_option("-r,--request", options->request_path, "request JSON file ('-' = stdin)")
      ->required();
  cmd.add_option("--image", options->image_paths,
                 "image file (PNG, JPEG or WebP) added to the request's images; repeatable")
      ->check(CLI::ExistingFile);
  cmd.add_option("--video", options->video_paths,
                 "video file (MP4/QuickTime, Matroska/WebM or AVI) added to the request's "
                 "videos; repeatable")
      ->check(CLI::ExistingFile);
}

}  // namespace clef::cli
