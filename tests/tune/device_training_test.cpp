// `clef tune`'s step on a device (ctest label `gpu`: Mesa's lavapipe where there is no GPU, as the
// rest of the device tests): the head's training graphs run there whole (every op of the forward,
// ggml's backward and AdamW), and every oracle case's gradients, norms, losses and parameters
// after the steps are within the device bar (kDevice), one graph per record and a batch in one
// graph. Skips only on a machine with no device at all.

#include <gtest/gtest.h>

#include "device/device.hpp"
#include "head/head_parameters.hpp"
#include "support/device_under_test.hpp"
#include "support/oracle_dirs.hpp"
#include "tune/tune_case.hpp"

namespace clef::tune {
namespace {

namespace fs = std::filesystem;

/// A trainer on the device under test holding `initial`.
HeadTrainer device_trainer(const head::HeadWeights& initial) {
  const device::Placement p = device::resolve("auto", -1);
  ggml_backend_ptr backend(ggml_backend_dev_init(p.gpu, nullptr));
  if (!backend) throw std::runtime_error("the device gave no backend");
  HeadTrainer trainer(initial.config(), std::move(backend), p.info.quirks.stale_descriptor_reads);
  const auto specs = head::head_parameter_specs(initial.config());
  for (std::size_t i = 0; i < specs.size(); ++i)
    trainer.write(HeadTrainer::Slot::weights, i, initial.at(specs[i].name).values);
  return trainer;
}

/// The device bar (docs/tuning.md, "Where"): ggml-vulkan rounds the inputs of some f32 products
/// to f16, so losses within 1e-3 relative, gradients within 3% of their tensor's largest (1e-4
/// absolute where the true gradient is 0), parameters after the steps within 2 x lr x steps
/// (AdamW turns the rounding of a truly-zero gradient, the attention key biases', into steps of
/// order lr). Measured on lavapipe: gradients 1.3%, parameters 1.3 x. (A batch in one graph drifted
/// by up to 27% of a tensor's largest gradient there, the decoder's masked self-attention: on a
/// device the trainer runs one graph per record, which this checks through the batch call too.)
const testing::Tolerances kDevice{1e-3, 3e-2, 1e-4, 2.0, false};

std::vector<fs::path> bundled_cases() {
  return test::tune_case_dirs(fs::path(CLEF_TEST_DATA) / "oracle" / "tune");
}

TEST(DeviceTraining, TheDeviceRunsEveryOpOfTheTrainingGraphs) {
  SKIP_WITHOUT_DEVICE();
  const fs::path dir = fs::path(CLEF_TEST_DATA) / "oracle" / "head" / "tiny";
  const head::HeadWeights initial =
      head::HeadWeights::load(dir / "joint_head_f32.safetensors", dir / "joint_head_config.json");
  const HeadTrainer trainer = device_trainer(initial);
  EXPECT_NE(trainer.backend_name(), "CPU");
  std::string missing;
  for (const std::string& op : trainer.unsupported_ops()) missing += " " + op;
  EXPECT_TRUE(missing.empty()) << trainer.backend_name() << " lacks" << missing;
}

TEST(DeviceTraining, EveryBundledCaseMatchesTheAuthorsStep) {
  SKIP_WITHOUT_DEVICE();
  for (const fs::path& dir : bundled_cases()) {
    testing::check_case(dir, testing::Graphs::per_record, device_trainer, kDevice);
    testing::check_case(dir, testing::Graphs::one_graph, device_trainer, kDevice);
  }
}

}  // namespace
}  // namespace clef::tune
