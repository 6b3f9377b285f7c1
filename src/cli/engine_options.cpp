#include "cli/engine_options.hpp"

#include "cli/option_kinds.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "decision/calibration.hpp"
#include "device/device.hpp"
#include "registry/model_store.hpp"
#include "registry/registry.hpp"
#include "util/error.hpp"

namespace clef::cli {
namespace {

template <typename Int = int>
Int parse_int_setting(const std::string& name, const std::string& value) {
  Int out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size()) {
    throw invalid_request("--set " + name + "=" + value + ": not an integer", name);
  }
  return out;
}

/// A 0|1 engine parameter. Throws clef::Error (invalid_request naming it) for anything else.
bool parse_switch_setting(const std::string& name, const std::string& value) {
  if (value == "0") return false;
  if (value == "1") return true;
  throw invalid_request("--set " + name + "=" + value + ": expected 0 or 1", name);
}

}  // namespace

CLI::Validator finite_range(double lo, double hi) {
  const auto text = [](double v) {
    // The shortest form that reads back: 1e-09, 0.01, 1000000000 (std::to_string's six decimals
    // showed 1e-9 as 0).
    char b[32];
    std::snprintf(b, sizeof b, "%.10g", v);
    return std::string(b);
  };
  const std::string range = text(lo) + ".." + text(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& value) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(value, v) || !std::isfinite(v) || v < lo || v > hi) {
          return "a number in " + range + " is needed, got " + value;
        }
        return {};
      },
      range);
}

int parse_gpu_layers(const std::string& value) {
  if (value == "auto") return backbone::kAutoGpuLayers;
  int out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || out < -1) {
    throw invalid_request(
        "gpu_layers " + value + ": expected auto, -1 (all), 0 (CPU) or a layer count",
        "gpu_layers");
  }
  return out;
}

void EngineOptions::add_to(CLI::App& cmd) {
  const std::size_t before = cmd.get_options().size();
  cmd.add_option("--model-dir", model_dir,
                 "directory with backbone.gguf, mmproj*.gguf, joint_head.safetensors, "
                 "joint_head_config.json");
  cmd.add_option("-m,--model", model,
                 "backbone GGUF (qwen35, any quantization), or a registry name NAME:TAG such as "
                 "clef-flash:9b (fetched into the model store when missing)");
  cmd.add_option("--head", head, "joint_head.safetensors");
  cmd.add_option("--head-config", head_config, "joint_head_config.json (default: beside --head)");
  cmd.add_option("--mmproj", mmproj, "qwen3vl mmproj GGUF");
  cmd.add_option(
      "--alias", alias,
      "served model name (default: clef for Clef 27B's published head, else clef-flash)");
  cmd.add_option("--truncation", truncation,
                 "a record over the context: truncate the state (reference) or refuse (413)")
      ->capture_default_str()
      ->check(CLI::IsMember({"truncate", "refuse"}));
  cmd.add_option("--unknown-fields", unknown_fields,
                 "a request field the contract does not know: accept it (the reference's "
                 "behaviour; the response's X-Clef-Ignored-Fields and the log name it) or "
                 "refuse it (400 naming the field and the nearest known one)")
      ->capture_default_str()
      ->check(CLI::IsMember({"accept", "refuse"}));
  context_size_option = cmd.add_option("-c,--context-size", flags.backbone.context_size,
                                       "context size in tokens (512..262144)")
                            ->capture_default_str();
  CLI::Option* threads_option =
      add_range_option(cmd, "-t,--threads", flags.backbone.threads,
                       "CPU threads (0 = the physical cores this process may use; at most 512)", 0,
                       backbone::kMaxThreads);
  gpu_layers_option =
      cmd.add_option("--gpu-layers", gpu_layers,
                     "backbone layers on the GPU: auto (what fits its free memory, the rest on "
                     "the CPU; the log says how many), -1 all, 0 CPU only, or a count")
          ->capture_default_str();
  CLI::Option* device_option =
      cmd.add_option("--device", flags.backbone.device,
                     "where the backbone, vision tower and joint schema head run: auto (the first "
                     "GPU: CUDA in a CUDA build, else Vulkan; else the CPU; a CPU-type Vulkan "
                     "device such as lavapipe only with CLEF_VK_ALLOW_CPU_DEVICE=1), cpu, or a "
                     "device name such as Vulkan0 or CUDA0 (clef info lists them)")
          ->capture_default_str();
  CLI::Option* chunk_option =
      cmd.add_option("--chunk-tokens", flags.backbone.chunk_tokens, "prefill chunk size in tokens")
          ->capture_default_str();
  CLI::Option* parallel_option = add_range_option(
      cmd, "--parallel", flags.backbone.parallel,
      "records prefilled together (continuous batching): each holds the memory of a "
      "whole context (1..64; 1: one at a time, a short request passes a long one "
      "between its batches)",
      1, backbone::kMaxParallel);
  cmd.add_option("--set", settings,
                 "engine parameter name=value (context_size, threads, gpu_layers, chunk_tokens, "
                 "parallel, "
                 "flash_attention=0|1, weight_repacking=0|1, cpu_amx=auto|on|off (Intel AMX "
                 "tiles for the CPU's matrix products; auto: where the CPU has them), "
                 "device=NAME, state_cache_mb=MiB, "
                 "resume_snapshot_ms=MS (a long prefill's progress snapshots; 0 off), "
                 "mmproj_normalization=reference|file: the mmproj's own image mean/std even "
                 "when they are not 0.5/0.5)");
  add_range_option(cmd, "--max-image-tokens", flags.max_image_tokens,
                   "image tokens one image may have after resizing, else 413 (0: only the context; "
                   "4096 is a 2048x2048 image)",
                   0, 1000000000);
  add_range_option(cmd, "--max-request-image-tokens", flags.max_request_image_tokens,
                   "image tokens all images of a request may have together (0: only the context)",
                   0, 1000000000);
  add_range_option(cmd, "--max-vision-memory", max_vision_memory_mib,
                   "MiB of compute memory the vision tower may take for one image, else 413 "
                   "(0: what the memory plan leaves, at most a quarter of physical memory)",
                   std::uint64_t{0}, std::uint64_t{1} << 30);
  CLI::Option* state_cache_option = add_range_option(
      cmd, "--state-cache-mb", flags.state_cache_mb,
      "MiB for the state cache: backbone memory + hidden rows of record prefixes, so "
      "a request with the same state (and images) as an earlier one prefills only its "
      "questions (0: off; -1: what the memory plan leaves, at most 4096; clef ask: "
      "none unless given MiB)",
      std::int64_t{-1}, std::int64_t{1} << 40);
  flag_of_setting = {{"context_size", context_size_option}, {"threads", threads_option},
                     {"gpu_layers", gpu_layers_option},     {"chunk_tokens", chunk_option},
                     {"parallel", parallel_option},         {"device", device_option},
                     {"state_cache_mb", state_cache_option}};
  add_range_option(cmd, "--memory-limit", memory_limit_mib,
                   "MiB of host memory to plan on, more or less than the machine reports (0: what "
                   "this process may use at start: MemAvailable, or the cgroup's limit); a model, "
                   "context and parallel that do not fit are refused at start with the arithmetic",
                   std::uint64_t{0}, std::uint64_t{1} << 30);
  add_range_option(cmd, "--gpu-memory-limit", gpu_memory_limit_mib,
                   "MiB of GPU memory to plan on (0: what the GPU has free at start); "
                   "--gpu-layers auto offloads what fits it",
                   std::uint64_t{0}, std::uint64_t{1} << 30);
  cmd.add_option("--calibration", flags.calibration_path,
                 "apply a calibration file from `clef calibrate` to the answers (opt-in: without "
                 "it the answers are the reference's, byte for byte)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--confidence", flags.confidence,
                 "what `confidence` means in choice and score answers: reference (the chosen "
                 "option's probability), entropy (1 - H/ln n), gini (normalized), "
                 "max_over_uniform ((p_max - 1/n)/(1 - 1/n))")
      ->capture_default_str()
      ->check(CLI::IsMember({"reference", "entropy", "gini", "max_over_uniform"}));
  cmd.add_flag("--allow-media-urls,--allow-image-urls", flags.allow_media_urls,
               "fetch http(s) image and video URLs of requests (never loopback, private, "
               "link-local or metadata addresses; 20 MiB and 10 s per image, the video byte "
               "limit per video); --allow-image-urls is the old name");
  add_range_option(cmd, "--max-videos", flags.max_videos, "videos per request (0: refuse videos)",
                   0, 64);
  cmd.add_option("--max-video-seconds", flags.max_video_seconds, "longest video, seconds, else 413")
      ->capture_default_str()
      ->check(finite_range(0.001, 86400.0));
  add_range_option(cmd, "--max-video-frames", flags.max_video_frames,
                   "most frames the processor may keep of one video (after sampling at fps), and "
                   "most images in a frame list, else 413",
                   2, 100000);
  add_range_option(cmd, "--max-video-frame-pixels", flags.max_video_frame_pixels,
                   "largest video frame, width x height pixels from the header, else 413",
                   std::int64_t{1}, std::int64_t{1} << 32);
  add_range_option(cmd, "--max-video-mb", max_video_mb, "largest video file, MiB, else 413", 1,
                   4096);
  cmd.add_flag("-v,--verbose", verbose, "clef's own detail: ids, spans, timings, load progress");
  cmd.add_flag("--debug", debug,
               "also llama.cpp's and the vision tower's own log (hundreds of lines per load)");
  cmd.add_option("--registry", registry,
                 "a registry file whose entries add to or replace the shipped ones by name")
      ->check(CLI::ExistingFile);
  cmd.add_option("--models-dir", models_dir,
                 "the model store (default ${XDG_CACHE_HOME:-~/.cache}/clef/models)");
  cmd.add_option("--hub-endpoint", hub_endpoint, "hub URL for registry downloads (mirrors)")
      ->capture_default_str();
  cmd.add_flag("--offline", offline, "never download: a registry model must be in the store");
  const std::vector<CLI::Option*> all = cmd.get_options();
  model_options.assign(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
}

std::vector<std::string> EngineOptions::given_model_options() const {
  std::vector<std::string> given;
  for (const CLI::Option* o : model_options) {
    const std::string name = o->get_name();
    // What clef prints, not what the model runs with.
    if (name == "--verbose" || name == "--debug") continue;
    if (o->count() > 0) given.push_back(name);
  }
  return given;
}

void EngineOptions::add_model_positional(CLI::App& cmd) {
  cmd.add_option("MODEL", model, "a registry name NAME:TAG (e.g. clef-flash:9b), or a GGUF path");
}

runtime::EngineConfig EngineOptions::to_config() const {
  runtime::EngineConfig config = flags;
  if (!model_dir.empty()) {
    const runtime::EngineConfig dir = runtime::EngineConfig::from_model_dir(model_dir);
    config.backbone_path = dir.backbone_path;
    config.mmproj_path = dir.mmproj_path;
    config.head_path = dir.head_path;
    config.head_config_path = dir.head_config_path;
  }
  std::string model_file = model;
  std::optional<int> registry_context;  // the variant's engine defaults, unless a flag says
  std::optional<int> registry_gpu_layers;
  if (!model.empty() && registry::Registry::looks_like_reference(model)) {
    // A registry name: its files from the store, fetched and verified first when missing.
    const registry::Registry reg = registry::load_registry(registry);
    const registry::Resolved resolved = reg.resolve(model);
    registry::StoreOptions store;
    store.models_dir = models_dir;
    store.endpoint = hub_endpoint;
    store.offline = offline;
    const registry::StoredModel stored = registry::ensure_model(resolved, store, std::cerr);
    model_file = stored.model.string();
    if (!stored.mmproj.empty()) config.mmproj_path = stored.mmproj.string();
    if (!stored.head.empty()) {
      config.head_path = stored.head.string();
      // Without a head_config file the config beside the head, as --head takes it.
      config.head_config_path = (stored.head.parent_path() / "joint_head_config.json").string();
    }
    if (!stored.head_config.empty()) config.head_config_path = stored.head_config.string();
    if (alias.empty()) config.model_name = resolved.model->name;
    registry_context = resolved.variant->context_size;
    registry_gpu_layers = resolved.variant->gpu_layers;
  }
  if (!model_file.empty()) config.backbone_path = model_file;
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"--model", model_file},
        {"--head", head},
        {"--head-config", head_config},
        {"--mmproj", mmproj}}) {
    std::error_code ec;
    if (!path.empty() && !std::filesystem::is_regular_file(path, ec)) {
      if (std::filesystem::is_directory(path, ec)) {
        throw model_error(std::string(flag) + " " + path +
                          " is a directory: a folder of model files is --model-dir " + path +
                          " (a GGUF backbone, its mmproj, joint_head.safetensors and "
                          "joint_head_config.json)");
      }
      throw model_error(std::string(flag) + " " + path + ": no such file");
    }
  }
  if (!head.empty()) {
    config.head_path = head;
    config.head_config_path =
        (std::filesystem::path(head).parent_path() / "joint_head_config.json").string();
  }
  if (!head_config.empty()) config.head_config_path = head_config;
  if (!mmproj.empty()) config.mmproj_path = mmproj;
  if (config.backbone_path.empty()) {
    throw invalid_request("no backbone: pass --model FILE or --model-dir DIR", "model");
  }
  if (!alias.empty()) config.model_name = alias;
  config.truncation =
      truncation == "refuse" ? runtime::Truncation::refuse : runtime::Truncation::truncate;
  config.unknown_fields =
      unknown_fields == "refuse" ? request::UnknownFields::refuse : request::UnknownFields::accept;
  config.debug_log = debug;
  config.max_video_bytes = std::int64_t{max_video_mb} << 20;
  config.max_vision_memory = max_vision_memory_mib << 20;
  config.memory_limit = memory_limit_mib << 20;
  config.gpu_memory_limit = gpu_memory_limit_mib << 20;
  // Read now, so a bad file is refused before a server binds its port or loads a model.
  if (!config.calibration_path.empty()) decision::load_calibration(config.calibration_path);
  auto& p = config.backbone;
  p.gpu_layers = parse_gpu_layers(gpu_layers);
  if (registry_context && (context_size_option == nullptr || context_size_option->count() == 0)) {
    p.context_size = *registry_context;
  }
  if (registry_gpu_layers && (gpu_layers_option == nullptr || gpu_layers_option->count() == 0)) {
    p.gpu_layers = *registry_gpu_layers;
  }
  bool gpu_layers_given = gpu_layers_option != nullptr && gpu_layers_option->count() > 0;
  for (const std::string& s : settings) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw invalid_request("--set expects name=value, got " + s, "set");
    const std::string name = s.substr(0, eq);
    const std::string value = s.substr(eq + 1);
    // A setting given twice, or as its flag and as --set: one would silently win (issue 53).
    for (const std::string& other : settings) {
      if (&other == &s) break;
      if (other.substr(0, other.find('=')) == name) {
        throw invalid_request(
            "--set " + other + " and --set " + s + " both set " + name + ": give it once", name);
      }
    }
    for (const auto& [setting, option] : flag_of_setting) {
      if (setting == name && option != nullptr && option->count() > 0) {
        throw invalid_request(
            "--set " + s + " and " + option->get_name() + " both set " + name + ": give it once",
            name);
      }
    }
    if (name == "context_size") {
      p.context_size = parse_int_setting(name, value);
    } else if (name == "threads") {
      p.threads = parse_int_setting(name, value);
    } else if (name == "gpu_layers") {
      p.gpu_layers = parse_gpu_layers(value);
      gpu_layers_given = true;
    } else if (name == "chunk_tokens") {
      p.chunk_tokens = parse_int_setting(name, value);
    } else if (name == "parallel") {
      p.parallel = parse_int_setting(name, value);
    } else if (name == "flash_attention") {
      p.flash_attention = parse_switch_setting(name, value);
    } else if (name == "weight_repacking") {
      p.weight_repacking = parse_switch_setting(name, value);
    } else if (name == "cpu_amx") {
      p.cpu_amx = device::parse_cpu_amx(value);
    } else if (name == "device") {
      p.device = value;
    } else if (name == "resume_snapshot_ms") {
      config.resume_snapshot_ms = parse_int_setting(name, value);
      if (config.resume_snapshot_ms < 0) {
        throw invalid_request("--set resume_snapshot_ms=" + value + ": expected 0 (off) or ms",
                              name);
      }
    } else if (name == "state_cache_mb") {
      config.state_cache_mb = parse_int_setting<std::int64_t>(name, value);
      if (config.state_cache_mb < -1) {
        throw invalid_request("--set state_cache_mb=" + value + ": expected -1, 0 or MiB", name);
      }
    } else if (name == "mmproj_normalization") {
      if (value != "reference" && value != "file") {
        throw invalid_request(
            "--set mmproj_normalization=" + value + ": expected reference or file", name);
      }
      config.mmproj_file_normalization = value == "file";
    } else {
      throw invalid_request("--set: unknown engine parameter '" + name +
                                "' (known: context_size, threads, gpu_layers, chunk_tokens, "
                                "parallel, flash_attention, weight_repacking, cpu_amx, device, "
                                "resume_snapshot_ms, mmproj_normalization, state_cache_mb)",
                            "set");
    }
  }
  // A layer count for the GPU with the CPU named as the device was taken silently (issue 53).
  if (gpu_layers_given && device::names_cpu(p.device) && p.gpu_layers > 0) {
    throw invalid_request("--gpu-layers " + std::to_string(p.gpu_layers) +
                              " with --device cpu: the CPU runs every layer; drop --gpu-layers, "
                              "or name a GPU with --device",
                          "gpu_layers");
  }
  return config;
}

runtime::EngineConfig EngineOptions::loading_config() const {
  runtime::EngineConfig config = to_config();
  config.backbone.on_progress = progress_printer("backbone", verbose);
  return config;
}

std::function<bool(float)> progress_printer(std::string what, bool force) {
  if (!force && ::isatty(STDERR_FILENO) == 0) return {};
  auto last = std::make_shared<int>(-1);
  return [what = std::move(what), last](float progress) {
    const int pct = static_cast<int>(progress * 100.0f);
    if (pct != *last) {
      *last = pct;
      std::fprintf(stderr, "\rloading %s: %3d%%%s", what.c_str(), pct, pct >= 100 ? "\n" : "");
      std::fflush(stderr);
    }
    return true;
  };
}

}  // namespace clef::cli
