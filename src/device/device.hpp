#pragma once
// Where the model runs: the ggml backend devices this build offers (the CPU; Vulkan devices through
// the prebuilt Vulkan backend module, backends.hpp; CUDA GPUs when clef is built with
// CLEF_CUDA=ON), the one `--device` picks for the backbone, the vision tower and the joint
// schema head together, and the driver bugs clef works around, told here once (Quirks).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpp.h"

namespace clef::device {

/// What a device's driver needs done differently.
struct Quirks {
  /// Mesa's lavapipe (Vulkan devices named "llvmpipe ..."; Mesa 22.3) reads every binding of a
  /// bound descriptor set, stale ones too: a compute buffer freed while the backend that
  /// dispatched over it lives is read after free (heap corruption, a crash at a later call:
  /// docs/performance.md, "The device path on Vulkan"). So a buffer a larger graph outgrows is
  /// kept until its backend goes (the joint schema head), or the component is loaded afresh with
  /// a new backend (the vision tower), instead of being freed.
  bool stale_descriptor_reads = false;
};

/// The quirks of a GPU whose driver describes it as `description` (ggml's device description,
/// the Vulkan device name). A CPU, or any other device: none.
constexpr Quirks quirks_of(std::string_view description) {
  Quirks q;
  q.stale_descriptor_reads = description.starts_with("llvmpipe");
  return q;
}

/// One ggml backend device.
struct DeviceInfo {
  std::string name;              ///< ggml's name, e.g. "CPU", "CUDA0"
  std::string description;       ///< e.g. the GPU's product name
  bool gpu = false;              ///< a GPU (or integrated GPU) device
  bool cpu_type = false;         ///< a GPU device that is software on the CPU (Vulkan lavapipe)
  Quirks quirks;                 ///< its driver's bugs clef works around (quirks_of)
  std::size_t memory_free = 0;   ///< bytes, as the device reports them (0: unknown)
  std::size_t memory_total = 0;  ///< bytes
};

/// Every device of this build, in ggml's order (compiled-in GPUs, the CPU, then the devices of
/// loaded backend modules: Vulkan0, ...). Loads the backend modules (load_backends).
std::vector<DeviceInfo> list();

/// The device chosen for a model: a GPU, or the CPU (gpu == nullptr).
struct Placement {
  ggml_backend_dev_t gpu = nullptr;
  DeviceInfo info;  ///< the chosen device (the CPU's when gpu is null)
  /// The backbone layers to offload: BackboneParams::gpu_layers (-1 for auto, which the engine's
  /// memory plan resolves before it loads), or 0 on the CPU.
  int gpu_layers = 0;
};

/// Whether a `--device` value names the CPU ("cpu", any case).
bool names_cpu(std::string_view device);

/// The placement a `--device` value and `gpu_layers` give:
///  - "auto": the first GPU when there is one and gpu_layers != 0, else the CPU; a CPU-type
///    Vulkan device (lavapipe) only with CLEF_VK_ALLOW_CPU_DEVICE=1;
///  - "cpu": the CPU, whatever gpu_layers says (no offload; no backend module is loaded);
///  - a device name ("CUDA0", "Vulkan0", any case): that device, which must be a GPU.
/// gpu_layers 0 keeps the backbone on the CPU even with a GPU device named (the tower and head
/// follow the backbone). Throws clef::Error (invalid_request, param "device") for an unknown
/// name, listing the devices there are.
Placement resolve(std::string_view device, int gpu_layers);

/// `gpu` followed by a null entry, for llama_model_params::devices; the array lives as long as
/// the process (ggml's devices do too).
ggml_backend_dev_t* as_device_list(ggml_backend_dev_t gpu);

/// A component (the joint schema head, its trainer) built on `placement`'s GPU by
/// `make(ggml_backend_ptr)`, when there is one and its backend runs every op the component needs
/// (T::unsupported_ops() empty); else nullopt, for the caller to build it on the CPU. `where`
/// says which: the backend's name (T::backend_name()), or "CPU" and why ("CPU (Vulkan0 lacks
/// OP ...)", "CPU (Vulkan0 gave no backend)").
template <typename T, typename Make>
std::optional<T> on_gpu(const Placement& placement, const Make& make, std::string& where) {
  where = "CPU";
  if (placement.gpu == nullptr) return std::nullopt;
  ggml_backend_t raw = ggml_backend_dev_init(placement.gpu, nullptr);
  if (raw == nullptr) {
    where = "CPU (" + placement.info.name + " gave no backend)";
    return std::nullopt;
  }
  T built = make(ggml_backend_ptr(raw));
  const std::vector<std::string> missing = built.unsupported_ops();
  if (missing.empty()) {
    where = built.backend_name();
    return built;
  }
  where = "CPU (" + placement.info.name + " lacks";
  for (const std::string& op : missing) where += " " + op;
  where += ")";
  return std::nullopt;
}

/// One line naming the placement, e.g. "CUDA0 (NVIDIA H200, 139.8 GiB, 139.2 GiB free)" or "CPU".
std::string describe(const Placement& placement);

}  // namespace clef::device
