// The devices of this build and what `--device` picks: the CPU always, a GPU only when one is
// there (a Vulkan GPU, or a CLEF_CUDA build on a machine with an NVIDIA GPU), a CPU-type Vulkan
// device (lavapipe) only when named or allowed, the prebuilt Vulkan backend bound to clef's one
// libggml-base.so, an unknown name refused naming the field and the devices there are.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>

#include "device/backends.hpp"
#include "device/device.hpp"
#include "device/vulkan_probe.hpp"
#include "util/error.hpp"

namespace clef::device {
namespace {

bool has_gpu() {
  const auto all = list();
  return std::any_of(all.begin(), all.end(), [](const DeviceInfo& d) {
    return d.gpu && (!d.cpu_type || cpu_type_devices_allowed());
  });
}

/// Sets an environment variable for one scope (these tests run one at a time per process).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The files mapped into this process whose names contain `part`.
std::set<std::string> mapped(const std::string& part) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> out;
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash != std::string::npos && line.find(part, slash) != std::string::npos) {
      out.insert(line.substr(slash));
    }
  }
  return out;
}

TEST(Devices, TheCpuIsAlwaysListed) {
  const auto all = list();
  const auto cpu = std::find_if(all.begin(), all.end(), [](const DeviceInfo& d) { return !d.gpu; });
  ASSERT_NE(cpu, all.end());
  EXPECT_EQ(cpu->name, "CPU");
  EXPECT_FALSE(cpu->description.empty());
}

TEST(Devices, CpuMeansNoOffloadWhateverGpuLayersSays) {
  for (const char* name : {"cpu", "CPU"}) {
    const Placement p = resolve(name, -1);
    EXPECT_EQ(p.gpu, nullptr);
    EXPECT_EQ(p.gpu_layers, 0);
    EXPECT_EQ(describe(p), "CPU");
  }
}

TEST(Devices, AutoTakesTheFirstGpuUnlessGpuLayersIsZero) {
  EXPECT_EQ(resolve("auto", 0).gpu, nullptr);
  const Placement all = resolve("auto", -1);
  if (!has_gpu()) {
    EXPECT_EQ(all.gpu, nullptr);
    EXPECT_EQ(all.gpu_layers, 0);
    return;
  }
  ASSERT_NE(all.gpu, nullptr);
  EXPECT_EQ(all.gpu_layers, -1);
  EXPECT_TRUE(all.info.gpu);
  EXPECT_NE(describe(all).find(all.info.name + " ("), std::string::npos);
  // Its llama.cpp device list: the GPU, then the end.
  const ggml_backend_dev_t* devices = as_device_list(all.gpu);
  EXPECT_EQ(devices[0], all.gpu);
  EXPECT_EQ(devices[1], nullptr);
  // Named, in any case, it is the same device.
  std::string lower = all.info.name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  EXPECT_EQ(resolve(lower, 8).gpu, all.gpu);
  EXPECT_EQ(resolve(lower, 8).gpu_layers, 8);
}

TEST(Devices, AnUnknownDeviceIsRefusedNamingTheField) {
  try {
    resolve("tpu7", -1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_request);
    EXPECT_EQ(e.param(), "device");
    EXPECT_NE(std::string(e.what()).find("tpu7"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("auto, cpu"), std::string::npos);
  }
}

TEST(Devices, VulkanDevicesAreListedWhereTheLoaderHasThem) {
  const VulkanProbe probe = probe_vulkan();
  const LoadedBackends& loaded = load_backends();
  if (!CLEF_HAS_VULKAN_MODULE || probe.devices.empty()) {
    EXPECT_FALSE(loaded.vulkan_note.empty());
    GTEST_SKIP() << "no Vulkan here: " << (probe.error.empty() ? loaded.vulkan_note : probe.error);
  }
  ASSERT_TRUE(loaded.vulkan) << loaded.vulkan_note;
  const auto all = list();
  const auto vk =
      std::find_if(all.begin(), all.end(), [](const DeviceInfo& d) { return d.name == "Vulkan0"; });
  ASSERT_NE(vk, all.end());
  EXPECT_TRUE(vk->gpu);
  EXPECT_GT(vk->memory_total, 0u);
  for (const DeviceInfo& d : all)
    std::cout << "[device] " << d.name << ": " << d.description << (d.cpu_type ? " (CPU type)" : "")
              << "\n";
}

/// The driver bug clef works around on lavapipe is told from the driver's device name, in
/// device/ only: Mesa's lavapipe ("llvmpipe ..."), not another software device (SwiftShader) nor
/// a GPU; and a listed device carries it.
TEST(Devices, QuirksAreToldFromTheDriversDeviceName) {
  EXPECT_TRUE(quirks_of("llvmpipe (LLVM 15.0.6, 256 bits)").stale_descriptor_reads);
  EXPECT_FALSE(quirks_of("SwiftShader Device (Subzero)").stale_descriptor_reads);
  EXPECT_FALSE(quirks_of("NVIDIA H100 80GB HBM3").stale_descriptor_reads);
  EXPECT_FALSE(quirks_of("AMD EPYC").stale_descriptor_reads);
  for (const DeviceInfo& d : list()) {
    EXPECT_EQ(d.quirks.stale_descriptor_reads, d.gpu && d.description.starts_with("llvmpipe"))
        << d.name << ": " << d.description;
  }
}

TEST(Devices, TheVulkanBackendBindsToClefsOwnGgmlBase) {
  const LoadedBackends& loaded = load_backends();
  if (!loaded.vulkan) GTEST_SKIP() << loaded.vulkan_note;
  // One libggml-base.so in the process: clef's, which the module's NEEDED entry resolved to.
  const std::set<std::string> bases = mapped("libggml-base");
  ASSERT_EQ(bases.size(), 1u) << "ggml-base mapped more than once";
  EXPECT_EQ(bases.begin()->rfind(CLEF_BINARY_DIR, 0), 0u) << *bases.begin() << " is not clef's";
  EXPECT_EQ(mapped("libggml-vulkan.so").size(), 1u);
  EXPECT_NE(loaded.vulkan_module.find("libggml-vulkan.so"), std::string::npos);
}

TEST(Devices, AutoTakesASoftwareVulkanDeviceOnlyWhenAllowed) {
  const auto all = list();
  const auto software =
      std::find_if(all.begin(), all.end(), [](const DeviceInfo& d) { return d.cpu_type; });
  if (software == all.end()) GTEST_SKIP() << "no CPU-type Vulkan device here";
  const bool other_gpu =
      std::any_of(all.begin(), all.end(), [](const DeviceInfo& d) { return d.gpu && !d.cpu_type; });
  {
    ScopedEnv off("CLEF_VK_ALLOW_CPU_DEVICE", "0");
    const Placement p = resolve("auto", -1);
    if (!other_gpu) {
      EXPECT_EQ(p.gpu, nullptr) << "auto took " << describe(p);
    }
    if (p.gpu != nullptr) {
      EXPECT_FALSE(p.info.cpu_type);
    }
    // Named, it is used.
    const Placement named = resolve(software->name, -1);
    ASSERT_NE(named.gpu, nullptr);
    EXPECT_EQ(named.info.name, software->name);
    EXPECT_TRUE(named.info.cpu_type);
  }
  ScopedEnv on("CLEF_VK_ALLOW_CPU_DEVICE", "1");
  const Placement p = resolve("auto", -1);
  ASSERT_NE(p.gpu, nullptr);
  if (!other_gpu) {
    EXPECT_EQ(p.info.name, software->name);
  }
}

}  // namespace
}  // namespace clef::device
