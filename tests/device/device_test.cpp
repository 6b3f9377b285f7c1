// The devices of this build and what `--device` picks: the CPU always, a GPU only when one is
// there (a CLEF_CUDA build on a machine with an NVIDIA GPU), an unknown name refused naming the
// field and the devices there are.
#include <gtest/gtest.h>

#include <algorithm>

#include "device/device.hpp"
#include "util/error.hpp"

namespace clef::device {
namespace {

bool has_gpu() {
  const auto all = list();
  return std::any_of(all.begin(), all.end(), [](const DeviceInfo& d) { return d.gpu; });
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

}  // namespace
}  // namespace clef::device
