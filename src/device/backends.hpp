#pragma once
// ggml's device backends that are not compiled into clef: the Vulkan backend, a module prebuilt
// from the pinned llama.cpp tree (scripts/fetch-vulkan) and loaded once per process with ggml's
// ggml_backend_load(). It binds to clef's own libggml-base.so (one copy of ggml's state).

#include <string>
#include <vector>

#include "ggml-backend.h"

namespace clef::device {

/// What loading the backend modules did, for `clef info` and the tests.
struct LoadedBackends {
  std::string vulkan_module;  ///< the path loaded ("" when none was)
  bool vulkan = false;        ///< the Vulkan backend is registered with ggml
  std::string vulkan_note;    ///< why it is not (no module in this build, no Vulkan loader, ...)
  /// GGML_VK_VISIBLE_DEVICES as the Vulkan backend read it ("" unset: ggml's own choice, GPUs only)
  std::string visible_devices;
  /// Per ggml Vulkan device (Vulkan0, Vulkan1, ...): a CPU-type device (lavapipe)
  std::vector<bool> vulkan_cpu_type;
};

/// Loads the backend modules the first time it is called (thread-safe; later calls return the
/// same record). The Vulkan module is looked for in $CLEF_GGML_BACKENDS_DIR, then in
/// ggml-backends/ beside the executable (lib/clef/ggml-backends/ in an install), then in the build
/// tree. When the Vulkan loader lists
/// only CPU-type devices, or CLEF_VK_ALLOW_CPU_DEVICE=1, and GGML_VK_VISIBLE_DEVICES is not set,
/// it sets that variable (GPUs first, then CPU-type devices) before the module reads it, so that
/// lavapipe can be named (`--device Vulkan0`). Never throws: a failure is a note.
const LoadedBackends& load_backends();

/// CLEF_VK_ALLOW_CPU_DEVICE is set to 1: `--device auto` may pick a CPU-type Vulkan device.
bool cpu_type_devices_allowed();

/// The device is a Vulkan device of CPU type (e.g. "llvmpipe"): only used when named or allowed.
bool is_cpu_type(ggml_backend_dev_t dev);

}  // namespace clef::device
