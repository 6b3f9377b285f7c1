#include "device/vulkan_probe.hpp"

#include <dlfcn.h>

#include <memory>

#ifdef CLEF_VULKAN_HEADERS
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#endif

namespace clef::device {

#ifndef CLEF_VULKAN_HEADERS
VulkanProbe probe_vulkan() {
  VulkanProbe out;
  out.error = "clef was built without the Vulkan headers (libvulkan-dev)";
  return out;
}
#else

namespace {

struct LibraryCloser {
  void operator()(void* handle) const { ::dlclose(handle); }
};
using Library = std::unique_ptr<void, LibraryCloser>;

}  // namespace

VulkanProbe probe_vulkan() {
  VulkanProbe out;
  Library lib(::dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!lib) {
    const char* why = ::dlerror();
    out.error = std::string("no Vulkan loader (libvulkan.so.1): ") + (why ? why : "not found");
    return out;
  }
  const auto get_proc =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(lib.get(), "vkGetInstanceProcAddr"));
  if (get_proc == nullptr) {
    out.error = "libvulkan.so.1 has no vkGetInstanceProcAddr";
    return out;
  }
  const auto create = reinterpret_cast<PFN_vkCreateInstance>(get_proc(nullptr, "vkCreateInstance"));
  if (create == nullptr) {
    out.error = "libvulkan.so.1 has no vkCreateInstance";
    return out;
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "clef";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (const VkResult r = create(&info, nullptr, &instance); r != VK_SUCCESS) {
    out.error = "vkCreateInstance failed (VkResult " + std::to_string(r) + ")";
    return out;
  }
  out.loader = true;
  const auto destroy =
      reinterpret_cast<PFN_vkDestroyInstance>(get_proc(instance, "vkDestroyInstance"));
  const auto enumerate = reinterpret_cast<PFN_vkEnumeratePhysicalDevices>(
      get_proc(instance, "vkEnumeratePhysicalDevices"));
  const auto properties = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(
      get_proc(instance, "vkGetPhysicalDeviceProperties"));
  std::uint32_t count = 0;
  if (enumerate == nullptr || properties == nullptr ||
      enumerate(instance, &count, nullptr) != VK_SUCCESS) {
    out.error = "vkEnumeratePhysicalDevices failed";
  } else {
    std::vector<VkPhysicalDevice> handles(count);
    if (count > 0 && enumerate(instance, &count, handles.data()) < 0) count = 0;
    handles.resize(count);
    for (VkPhysicalDevice handle : handles) {
      VkPhysicalDeviceProperties p{};
      properties(handle, &p);
      VulkanPhysicalDevice d;
      d.name = p.deviceName;
      d.cpu_type = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
      d.gpu_type = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                   p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
      out.devices.push_back(std::move(d));
    }
    if (out.devices.empty()) out.error = "the Vulkan loader lists no physical device";
  }
  if (destroy != nullptr) destroy(instance, nullptr);
  return out;
}
#endif

std::string visible_devices_order(const std::vector<VulkanPhysicalDevice>& devices) {
  std::string out;
  for (int pass = 0; pass < 3; ++pass) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const VulkanPhysicalDevice& d = devices[i];
      const int rank = d.gpu_type ? 0 : d.cpu_type ? 2 : 1;
      if (rank != pass) continue;
      if (!out.empty()) out += ',';
      out += std::to_string(i);
    }
  }
  return out;
}

}  // namespace clef::device
