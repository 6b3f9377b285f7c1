#include "device/device.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "device/backends.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace clef::device {

namespace {

bool is_gpu(ggml_backend_dev_t dev) {
  const auto type = ggml_backend_dev_type(dev);
  return type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU;
}

DeviceInfo info_of(ggml_backend_dev_t dev) {
  DeviceInfo d;
  d.name = ggml_backend_dev_name(dev);
  d.description = ggml_backend_dev_description(dev);
  d.gpu = is_gpu(dev);
  d.cpu_type = d.gpu && is_cpu_type(dev);
  if (d.gpu) d.quirks = quirks_of(d.description);
  ggml_backend_dev_memory(dev, &d.memory_free, &d.memory_total);
  return d;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

ggml_backend_dev_t cpu_device() {
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (cpu == nullptr) throw Error(ErrorKind::internal, "internal", "ggml has no CPU device");
  return cpu;
}

}  // namespace

bool names_cpu(std::string_view device) {
  return lower(device) == "cpu";
}

std::vector<DeviceInfo> list() {
  load_backends();
  std::vector<DeviceInfo> out;
  for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    out.push_back(info_of(ggml_backend_dev_get(i)));
  }
  return out;
}

Placement resolve(std::string_view device, int gpu_layers) {
  Placement cpu;
  cpu.info = info_of(cpu_device());
  const std::string wanted = lower(device);
  if (names_cpu(device)) return cpu;  // the CPU alone: no backend module is loaded for it
  load_backends();
  const bool software_ok = cpu_type_devices_allowed();
  ggml_backend_dev_t chosen = nullptr;
  std::string known = "auto, cpu";
  for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    if (!is_gpu(dev)) continue;
    known += std::string(", ") + ggml_backend_dev_name(dev);
    // auto never lands on a software rasterizer (lavapipe) unless CLEF_VK_ALLOW_CPU_DEVICE=1.
    const bool pick = wanted == "auto" ? software_ok || !is_cpu_type(dev)
                                       : wanted == lower(ggml_backend_dev_name(dev));
    if (chosen == nullptr && pick) chosen = dev;
  }
  if (chosen == nullptr && wanted != "auto") {
    throw invalid_request(
        "no device '" + std::string(device) + "' in this build (devices: " + known + ")", "device");
  }
  if (chosen == nullptr || gpu_layers == 0) return cpu;
  Placement out;
  out.gpu = chosen;
  out.info = info_of(chosen);
  out.gpu_layers = gpu_layers < -1 ? -1 : gpu_layers;  // auto, unplanned: all
  return out;
}

ggml_backend_dev_t* as_device_list(ggml_backend_dev_t gpu) {
  // One null-terminated list per device, made once: ggml's devices live as long as the process.
  static std::map<ggml_backend_dev_t, std::array<ggml_backend_dev_t, 2>> lists = [] {
    std::map<ggml_backend_dev_t, std::array<ggml_backend_dev_t, 2>> m;
    for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i) {
      ggml_backend_dev_t dev = ggml_backend_dev_get(i);
      m[dev] = {dev, nullptr};
    }
    return m;
  }();
  const auto it = lists.find(gpu);
  if (it == lists.end()) throw Error(ErrorKind::internal, "internal", "not a ggml device");
  return it->second.data();
}

std::string describe(const Placement& placement) {
  const DeviceInfo& d = placement.info;
  if (placement.gpu == nullptr) return "CPU";
  std::string out = d.name + " (" + d.description;
  if (d.memory_total > 0) {
    out += ", " + util::human_bytes(d.memory_total) + ", " + util::human_bytes(d.memory_free) +
           " free";
  }
  return out + ")";
}

}  // namespace clef::device
