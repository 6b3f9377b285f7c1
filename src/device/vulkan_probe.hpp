#pragma once
// The Vulkan physical devices of this machine, read through the system's Vulkan loader
// (libvulkan.so.1, opened at run time so that clef runs where there is none). ggml's Vulkan backend
// hides CPU-type devices (Mesa's lavapipe, a software rasterizer) unless GGML_VK_VISIBLE_DEVICES
// names them; clef reads the types here to make them visible after the real GPUs and to keep
// `--device auto` off them.

#include <string>
#include <vector>

namespace clef::device {

/// One Vulkan physical device, in the loader's order (its index is GGML_VK_VISIBLE_DEVICES's).
struct VulkanPhysicalDevice {
  std::string name;       ///< VkPhysicalDeviceProperties::deviceName
  bool cpu_type = false;  ///< VK_PHYSICAL_DEVICE_TYPE_CPU (lavapipe, SwiftShader)
  bool gpu_type = false;  ///< a discrete or integrated GPU
};

/// What the probe found: the devices, or why there are none.
struct VulkanProbe {
  bool loader = false;  ///< libvulkan.so.1 was loaded and made an instance
  std::vector<VulkanPhysicalDevice> devices;
  std::string error;  ///< why loader is false or devices is empty
};

/// Enumerates the physical devices (vkCreateInstance with no layers or extensions). Never throws:
/// a missing loader or a failing driver is reported in `error`.
VulkanProbe probe_vulkan();

/// The GGML_VK_VISIBLE_DEVICES value that lists the GPUs first, in the loader's order, then the
/// CPU-type devices; "" when there are none. Other types (virtual GPUs) come between the two.
std::string visible_devices_order(const std::vector<VulkanPhysicalDevice>& devices);

}  // namespace clef::device
