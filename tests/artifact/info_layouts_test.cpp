// `clef info` and `clef make-test-model --layout` over the artifact layouts: the layout is named,
// a head inside the GGUF is read and counted, and every difference from the reference head is
// listed.

#include <gtest/gtest.h>

#include "info/model_info.hpp"
#include "layouts_fixture.hpp"
#include "testmodel/make_test_model.hpp"

namespace clef::artifact {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

#define EXPECT_HAS(text, needle) \
  EXPECT_NE(std::string(text).find(needle), std::string::npos) << (text)

TEST(InfoLayouts, NamesTheLayoutAndTheDifferences) {
  const auto& m = test::layout_models();
  const info::ModelReport a = info::inspect_model({m.a().gguf, *m.a().head_weights});
  EXPECT_EQ(a.layout.substr(0, 2), "A:");
  EXPECT_HAS(joined(a.differences), "head width 32 (clef-flash 1024)");

  const info::ModelReport b = info::inspect_model({m.b_q8().gguf, *m.a().mmproj});
  EXPECT_EQ(b.layout.substr(0, 2), "B:");
  ASSERT_TRUE(b.head);
  const auto& c = b.head->config;
  EXPECT_EQ(b.head->n_tensors, 20 + 18 * c.routing_layers + 26 * c.layers);
  EXPECT_EQ(b.head->n_params, a.head->n_params);
  EXPECT_HAS(joined(b.differences), "Q8_0");
  EXPECT_HAS(joined(b.differences), "decision.scales");
  EXPECT_HAS(info::format_report(b), "layout B:");
  EXPECT_HAS(info::format_report(b), "head inside");

  const info::ModelReport cr = info::inspect_model({m.c().gguf});
  EXPECT_EQ(cr.layout.substr(0, 2), "C:");
  EXPECT_EQ(cr.head->n_tensors, a.head->n_tensors);
  EXPECT_HAS(joined(cr.differences), "F32");
}

TEST(MakeTestModel, LayoutCDirectoryLoadsWithTheSameHead) {
  test::TempDir dir;
  testmodel::MakeOptions o;
  o.dir = dir.path();
  o.seed = test::kTinySeed;
  o.layout = Layout::ollama;
  const testmodel::MadeModel made = testmodel::make_test_model(o);
  EXPECT_EQ(made.backbone.filename(), "model.gguf");
  EXPECT_TRUE(made.head.empty());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "backbone.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "joint_head.safetensors"));
  const OpenedModel c = open_model_dir(dir.path());
  EXPECT_EQ(c.layout, Layout::ollama);
  EXPECT_EQ(test::read_bytes(made.backbone), test::read_bytes(test::layout_models().c().gguf))
      << "the same seed writes the same layout C file";
  EXPECT_EQ(info::inspect_model({dir.path()}).layout.substr(0, 2), "C:");
}

}  // namespace
}  // namespace clef::artifact
