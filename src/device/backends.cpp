#include "device/backends.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "device/vulkan_probe.hpp"
#include "ggml.h"
#include "util/install_layout.hpp"

namespace clef::device {

namespace {

/// While it lives, ggml's log passes on only warnings and errors (to the log it replaced, which
/// it puts back when destroyed); debug and info lines, and their continuations, are dropped.
class QuietModuleLog {
 public:
  QuietModuleLog() {
    ggml_log_get(&saved_.callback, &saved_.user_data);
    ggml_log_set(&QuietModuleLog::filter, &saved_);
  }
  ~QuietModuleLog() { ggml_log_set(saved_.callback, saved_.user_data); }
  QuietModuleLog(const QuietModuleLog&) = delete;
  QuietModuleLog& operator=(const QuietModuleLog&) = delete;

 private:
  struct Saved {
    ggml_log_callback callback = nullptr;
    void* user_data = nullptr;
    bool passing = false;  ///< the last line passed (a GGML_LOG_LEVEL_CONT line follows it)
  };
  static void filter(ggml_log_level level, const char* text, void* user_data) {
    auto* saved = static_cast<Saved*>(user_data);
    if (level != GGML_LOG_LEVEL_CONT) {
      saved->passing = level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR;
    }
    if (saved->passing && saved->callback != nullptr) {
      saved->callback(level, text, saved->user_data);
    }
  }
  Saved saved_;
};

std::vector<std::string> module_candidates(const char* file) {
  std::vector<std::string> out;
  if (const char* dir = std::getenv("CLEF_GGML_BACKENDS_DIR"); dir != nullptr && *dir != '\0') {
    out.push_back((std::filesystem::path(dir) / file).string());
  }
  if (const auto shipped = util::shipped_modules("ggml-backends")) {
    out.push_back((*shipped / file).string());
  }
#ifdef CLEF_GGML_BACKENDS_DIR
  out.push_back((std::filesystem::path(CLEF_GGML_BACKENDS_DIR) / file).string());
#endif
  return out;
}

/// The physical device indices GGML_VK_VISIBLE_DEVICES lists, as ggml-vulkan parses it.
std::vector<std::size_t> parse_indices(const std::string& text) {
  std::string spaced = text;
  for (char& c : spaced) c = c == ',' ? ' ' : c;
  std::istringstream in(spaced);
  std::vector<std::size_t> out;
  for (std::size_t i; in >> i;) out.push_back(i);
  return out;
}

LoadedBackends load() {
  LoadedBackends out;
  std::string module;
  std::error_code ec;
  for (const std::string& path : module_candidates("libggml-vulkan.so")) {
    if (std::filesystem::exists(path, ec)) {
      module = path;
      break;
    }
  }
  if (module.empty()) {
    out.vulkan_note = "this build has no Vulkan backend (scripts/fetch-vulkan)";
    return out;
  }
  // The module NEEDs libvulkan.so.1; without a loader or a device there is nothing to register.
  const VulkanProbe probe = probe_vulkan();
  if (!probe.loader || probe.devices.empty()) {
    out.vulkan_note = probe.error;
    return out;
  }
  const char* set = std::getenv("GGML_VK_VISIBLE_DEVICES");
  bool any_gpu = false;
  for (const VulkanPhysicalDevice& d : probe.devices) any_gpu = any_gpu || d.gpu_type;
  std::vector<std::size_t> order;
  if (set != nullptr) {
    out.visible_devices = set;
    order = parse_indices(set);
  } else if (!any_gpu || cpu_type_devices_allowed()) {
    // Read by ggml-vulkan when the module registers (ggml_vk_instance_init), below: set before
    // any thread of clef's reads the environment concurrently (load_backends runs once).
    out.visible_devices = visible_devices_order(probe.devices);
    ::setenv("GGML_VK_VISIBLE_DEVICES", out.visible_devices.c_str(), 1);
    order = parse_indices(out.visible_devices);
  }
  ggml_backend_reg_t reg = nullptr;
  {
    // The module's own notes (its device list, "Device type is CPU. This is probably not the
    // device you want." on a machine whose only Vulkan device is lavapipe, "loaded Vulkan backend
    // from") are debug and info lines that ggml's default log prints at every start of a CPU
    // server; clef info lists the devices. Warnings and errors still go to the log in place.
    QuietModuleLog quiet;
    reg = ggml_backend_load(module.c_str());
  }
  if (reg == nullptr) {
    out.vulkan_note = "ggml could not load " + module + " (see the log above)";
    return out;
  }
  out.vulkan_module = module;
  out.vulkan = true;
  for (std::size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) {
    // Without GGML_VK_VISIBLE_DEVICES ggml-vulkan lists GPUs only.
    const bool cpu =
        i < order.size() && order[i] < probe.devices.size() && probe.devices[order[i]].cpu_type;
    out.vulkan_cpu_type.push_back(cpu);
  }
  if (out.vulkan_cpu_type.empty()) out.vulkan_note = "the Vulkan backend lists no device";
  return out;
}

}  // namespace

const LoadedBackends& load_backends() {
  static const LoadedBackends loaded = load();
  return loaded;
}

bool cpu_type_devices_allowed() {
  const char* v = std::getenv("CLEF_VK_ALLOW_CPU_DEVICE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

bool is_cpu_type(ggml_backend_dev_t dev) {
  const LoadedBackends& loaded = load_backends();
  const std::string name = ggml_backend_dev_name(dev);
  if (name.rfind("Vulkan", 0) != 0) return false;
  const std::string index = name.substr(6);
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return false;
  const std::size_t i = std::stoul(index);
  return i < loaded.vulkan_cpu_type.size() && loaded.vulkan_cpu_type[i];
}

}  // namespace clef::device
