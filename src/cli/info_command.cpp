// `clef info [DIR|FILES...|--model-dir DIR]`: prints what a model is (src/info/model_info.hpp), the
// devices of this build and where `--device` / `--gpu-layers` would put the model. Unusable files
// are refused with clef::Error model_error, which main() turns into exit code 2.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backbone/backbone_params.hpp"
#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "device/backends.hpp"
#include "device/cpu_path.hpp"
#include "device/device.hpp"
#include "info/model_info.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace clef::cli {

void add_info_command(CLI::App& cmd, ExitCode& exit_code) {
  auto paths = std::make_shared<std::vector<std::string>>();
  cmd.add_option("PATHS", *paths,
                 "a model directory, or backbone / mmproj GGUF and head safetensors / config "
                 "files (none: only the devices and the CPU path of this machine)");
  auto model_dir = std::make_shared<std::string>();
  CLI::Option* cmd_model_dir = cmd.add_option(
      "--model-dir", *model_dir,
      "a model directory, as clef serve and clef ask take it (the same as giving DIR)");
  auto device = std::make_shared<std::string>("auto");
  auto gpu_layers = std::make_shared<std::string>("auto");
  cmd.add_option("--device", *device, "the device to report the placement for (as clef serve)")
      ->capture_default_str();
  cmd.add_option("--gpu-layers", *gpu_layers, "backbone layers on the GPU (as clef serve)")
      ->capture_default_str();
  cmd.callback([paths, model_dir, cmd_model_dir, device, gpu_layers, &exit_code] {
    if (cmd_model_dir->count() > 0 && model_dir->empty()) {
      throw invalid_request("--model-dir is empty: give the model's directory", "model-dir");
    }
    if (!model_dir->empty()) {
      if (!paths->empty()) {
        throw invalid_request(
            "give the model once: --model-dir " + *model_dir + " or PATHS, not both", "model-dir");
      }
      paths->push_back(*model_dir);
    }
    // The placement options are checked as `clef serve` checks them, before anything is printed.
    backbone::BackboneParams params;
    params.device = *device;
    params.gpu_layers = parse_gpu_layers(*gpu_layers);
    backbone::validate(params);
    // Without a model: what this machine offers (a new user's first `clef info`).
    if (!paths->empty()) {
      std::vector<std::filesystem::path> p(paths->begin(), paths->end());
      std::cout << info::format_report(info::inspect_model(p)) << "\n";
    }
    std::cout << "devices of this build:\n";
    for (const device::DeviceInfo& d : device::list()) {
      std::cout << "  " << d.name
                << (d.cpu_type ? " (GPU on the CPU: used when named, or by auto with "
                                 "CLEF_VK_ALLOW_CPU_DEVICE=1)"
                    : d.gpu    ? " (GPU)"
                               : "")
                << ": " << d.description;
      if (d.memory_total > 0) {
        std::cout << ", " << util::human_bytes(d.memory_total) << " ("
                  << util::human_bytes(d.memory_free) << " free)";
      }
      std::cout << "\n";
    }
    if (const device::LoadedBackends& loaded = device::load_backends(); !loaded.vulkan) {
      std::cout << "  (no Vulkan devices: " << loaded.vulkan_note << ")\n";
    }
    device::use_cpu_amx(device::CpuAmx::automatic);  // as clef serve decides by default
    std::cout << "CPU matrix path (cpu_amx=auto): " << device::describe_cpu_path(true) << " ("
              << (device::cpu_reports_amx() ? "the CPU reports AMX-TILE and AMX-INT8"
                                            : "the CPU reports no AMX")
              << ")\n";
    const device::Placement placement = device::resolve(*device, params.gpu_layers);
    std::cout << "placement (--device " << *device << ", --gpu-layers " << *gpu_layers
              << "): " << device::describe(placement);
    if (placement.gpu != nullptr) {
      std::cout << ": backbone "
                << (params.gpu_layers == backbone::kAutoGpuLayers
                        ? std::string("layers as many as fit its free memory (auto; the serve "
                                      "log's device line says how many)")
                    : placement.gpu_layers < 0
                        ? std::string("all layers")
                        : "up to " + std::to_string(placement.gpu_layers) + " layers")
                << ", vision tower, joint schema head (the CPU for any of its ops the GPU "
                   "lacks)";
    }
    std::cout << "\n";
    exit_code.value = 0;
  });
}

}  // namespace clef::cli
