#pragma once
// Command-line options that choose model files and engine parameters, shared by the commands that
// load a model here (ask, batch, calibrate, serve, verify), and the set-up of such a command.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "runtime/engine/engine_config.hpp"

namespace clef::cli {

/// Model-file and engine-parameter options of one subcommand.
struct EngineOptions {
  std::string model_dir;    ///< --model-dir
  std::string model;        ///< --model: backbone GGUF, or a registry name NAME:TAG
  std::string head;         ///< --head: joint_head.safetensors
  std::string head_config;  ///< --head-config (default: joint_head_config.json beside --head)
  std::string mmproj;       ///< --mmproj
  std::string alias;        ///< --alias: served model name
  std::string truncation = "truncate";
  std::string unknown_fields = "accept";  ///< --unknown-fields: accept (and list) or refuse
  /// The engine parameters the flags set as they are (context size, threads, device, chunk,
  /// parallel, image and video limits, state cache, calibration, confidence, media URLs):
  /// to_config() starts from it.
  runtime::EngineConfig flags;
  std::string gpu_layers = "auto";          ///< --gpu-layers: auto, -1 (all), 0 (CPU) or a count
  std::uint64_t max_vision_memory_mib = 0;  ///< --max-vision-memory (0: the memory plan's)
  std::uint64_t memory_limit_mib = 0;       ///< --memory-limit (0: what the machine has)
  std::uint64_t gpu_memory_limit_mib = 0;   ///< --gpu-memory-limit (0: the GPU's free memory)
  std::vector<std::string> settings;        ///< --set name=value
  bool verbose = false;                     ///< --verbose: clef's own lines (ids, spans, timings)
  bool debug = false;                       ///< --debug: llama.cpp's and the tower's log too
  int max_video_mb = 64;                    ///< --max-video-mb
  std::string registry;    ///< --registry: a user registry file (overrides by name)
  std::string models_dir;  ///< --models-dir: the model store (default under the cache)
  std::string hub_endpoint = "https://huggingface.co";  ///< --hub-endpoint
  bool offline = false;                                 ///< --offline
  CLI::Option* context_size_option = nullptr;           ///< set by add_to
  CLI::Option* gpu_layers_option = nullptr;
  /// --set names that have a flag of their own (context_size: -c,--context-size, ...), with it:
  /// giving both is refused, whatever their order (set by add_to).
  std::vector<std::pair<std::string, CLI::Option*>> flag_of_setting;

  /// The options add_to registered (set by add_to).
  std::vector<const CLI::Option*> model_options;

  /// Registers the options on `cmd`.
  void add_to(CLI::App& cmd);
  /// The options of add_to given on the command line that configure a local model (all but
  /// --verbose and --debug), by their long names ("--threads"): what a command that does not load
  /// one (`clef batch --endpoint`) refuses.
  std::vector<std::string> given_model_options() const;
  /// Registers a positional registry name (`clef serve clef-flash:9b`), stored in `model`.
  void add_model_positional(CLI::App& cmd);
  /// The engine configuration the options describe. Throws clef::Error: invalid_request for a bad
  /// --set / --truncation / missing model files; model_error for an unusable --model-dir.
  runtime::EngineConfig to_config() const;
  /// to_config() for a command that loads the model in this process: the backbone's load
  /// progress on stderr (progress_printer, always with --verbose).
  runtime::EngineConfig loading_config() const;
};

/// Prints "loading <what>: NN%" on one stderr line while a model loads (when stderr is a
/// terminal, or always with `force`). Returns the callback for BackboneParams::on_progress.
std::function<bool(float)> progress_printer(std::string what, bool force);

/// Makes `cmd` a command over a local engine: its `Options` (a struct with an EngineOptions
/// `engine`) shared with the callback, the engine's options registered (and the positional
/// registry name when `model_positional`), and `run(options)` as the callback, whose result is the
/// exit code. Returns the options, for the command's own.
template <class Options>
std::shared_ptr<Options> add_engine_options(CLI::App& cmd, ExitCode& exit_code,
                                            std::function<int(Options&)> run,
                                            bool model_positional = false) {
  auto options = std::make_shared<Options>();
  options->engine.add_to(cmd);
  if (model_positional) options->engine.add_model_positional(cmd);
  cmd.callback([options, run = std::move(run), &exit_code] { exit_code.value = run(*options); });
  return options;
}

/// A finite number in lo..hi (CLI11's Range lets "nan" through: every comparison with NaN is
/// false). Its error: "a number in lo..hi is needed, got TEXT".
CLI::Validator finite_range(double lo, double hi);

/// A --gpu-layers value: "auto" (backbone::kAutoGpuLayers), -1 (all), 0 (CPU) or a layer count.
/// Throws clef::Error (invalid_request naming gpu_layers) for anything else.
int parse_gpu_layers(const std::string& value);

}  // namespace clef::cli
