// The joint schema head on a device (ctest label `gpu`; Mesa's lavapipe on a machine without a
// GPU): the CPU's logits on records that keep growing, each one outgrowing the head's compute
// buffer. On lavapipe the head keeps outgrown buffers (device::Quirks::stale_descriptor_reads, as
// the engine chooses there): with ggml's default of freeing them, two records of growing length on
// the small model's head crashed lavapipe or aborted in malloc in about half the runs (heap
// corruption; docs/performance.md, "The device path on Vulkan").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "device/device.hpp"
#include "head/head_weights.hpp"
#include "head/joint_schema_head.hpp"
#include "random_record.hpp"
#include "support/device_under_test.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/make_test_model.hpp"

namespace clef::head {
namespace {

/// The small test model's head (H = 256).
HeadWeights small_head(const std::filesystem::path& dir) {
  testmodel::MakeOptions o;
  o.dir = dir / "small";
  o.preset = "small";
  o.seed = 11;
  const testmodel::MadeModel made = testmodel::make_test_model(o);
  return HeadWeights::load(made.head, made.head_config);
}

JointSchemaHead on_the_device(const HeadWeights& w) {
  const device::Placement placement = device::resolve("auto", -1);
  ggml_backend_ptr backend(ggml_backend_dev_init(placement.gpu, nullptr));
  if (!backend) throw std::runtime_error("no backend for " + placement.info.name);
  return JointSchemaHead(w, std::move(backend), placement.info.quirks);
}

TEST(JointSchemaHeadOnADevice, GivesTheCpusLogitsOnRecordsThatKeepGrowing) {
  SKIP_WITHOUT_DEVICE();
  test::TempDir dir("clef-head-device");
  const HeadWeights w = small_head(dir.path());
  JointSchemaHead cpu(w, 1);
  double max_diff = 0;
  // Two heads, each over records of growing length (every one a new largest graph).
  for (int head = 0; head < 2; ++head) {
    JointSchemaHead device = on_the_device(w);
    ASSERT_TRUE(device.unsupported_ops().empty()) << device.backend_name();
    std::uint32_t seed = 100 * static_cast<std::uint32_t>(head);
    int questions = 0;
    for (std::int64_t n : {48, 80, 130, 210, 340, 459, 487, 550, 890}) {
      // 1 to 4 questions in turn: the graph's shape changes as well as its size
      const testing::RandomRecord r =
          testing::random_record(w.config(), n, ++seed, 1 + questions++ % 4);
      const auto expected = cpu.forward(r.hidden, n, r.questions, r.lexical);
      const auto got = device.forward(r.hidden, n, r.questions, r.lexical);
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t q = 0; q < got.size(); ++q) {
        ASSERT_EQ(got[q].size(), expected[q].size());
        for (std::size_t o = 0; o < got[q].size(); ++o) {
          const double d = std::fabs(static_cast<double>(got[q][o]) - expected[q][o]);
          max_diff = std::max(max_diff, d);
          EXPECT_LE(d, 1e-3 * std::max(1.0, std::fabs(static_cast<double>(expected[q][o]))))
              << n << " tokens, question " << q << ", option " << o;
        }
      }
    }
  }
  std::cout << "[device parity] small head, 18 records of 48 to 890 tokens: max |dlogit| "
            << max_diff << "\n";
}

}  // namespace
}  // namespace clef::head
