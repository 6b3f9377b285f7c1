#pragma once
// Test support for the `gpu` label: the device `--device auto` takes (a CUDA GPU, a Vulkan GPU, or
// Mesa's lavapipe where CLEF_VK_ALLOW_CPU_DEVICE=1, as ctest sets for these tests), and the skip
// for a machine with no device at all.

#include <gtest/gtest.h>

#include <string>

#include "device/backends.hpp"
#include "device/device.hpp"
#include "device/vulkan_probe.hpp"

namespace clef::test {

/// Why there is no device to test on, or "" when there is one. A machine whose Vulkan loader
/// lists a device, with a build that has the Vulkan backend, must give a device: not finding it
/// is a failure there, not a skip.
inline std::string no_device_reason() {
  if (device::resolve("auto", -1).gpu != nullptr) return "";
  const device::LoadedBackends& loaded = device::load_backends();
  const device::VulkanProbe probe = device::probe_vulkan();
  if (CLEF_HAS_VULKAN_MODULE && !probe.devices.empty()) {
    ADD_FAILURE() << "the Vulkan loader lists " << probe.devices.size() << " device(s) ("
                  << probe.devices.front().name
                  << ") but clef found no device: " << loaded.vulkan_note;
  }
  return loaded.vulkan_note.empty() ? probe.error : loaded.vulkan_note;
}

/// Whether the device under test is software on the CPU (lavapipe).
inline bool software_device() {
  return device::resolve("auto", -1).info.cpu_type;
}

}  // namespace clef::test

#define SKIP_WITHOUT_DEVICE()                                               \
  if (const std::string why = clef::test::no_device_reason(); !why.empty()) \
  GTEST_SKIP() << "no GPU or Vulkan device: " << why
