// make_test_model: the same seed gives byte-identical files, another seed different weights.
#include <gtest/gtest.h>

#include <llama.h>

#include "backbone/llama_handles.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/make_test_model.hpp"
#include "util/error.hpp"

namespace clef::testmodel {
namespace {

MadeModel make(const std::filesystem::path& dir, std::uint64_t seed) {
  MakeOptions o;
  o.dir = dir;
  o.seed = seed;
  o.preset = "tiny";
  return make_test_model(o);
}

TEST(MakeTestModel, SameSeedSameBytesOtherSeedOtherBytes) {
  const MadeModel& first = test::tiny_model();
  test::TempDir tmp;
  const MadeModel again = make(tmp.path() / "same", test::kTinySeed);
  const MadeModel other = make(tmp.path() / "other", test::kTinySeed + 1);
  for (auto member : {&MadeModel::backbone, &MadeModel::mmproj, &MadeModel::head}) {
    const std::string a = test::read_bytes(first.*member);
    SCOPED_TRACE((first.*member).filename().string());
    ASSERT_GT(a.size(), 0u);
    EXPECT_TRUE(a == test::read_bytes(again.*member));
    const std::string c = test::read_bytes(other.*member);
    EXPECT_EQ(a.size(), c.size());  // same shapes
    EXPECT_FALSE(a == c);
  }
  EXPECT_EQ(test::read_bytes(first.head_config), test::read_bytes(other.head_config));
}

TEST(MakeTestModel, QuantizedBackbonesHoldTheirTypeAndLoad) {
  // `make-test-model --quant`: llama.cpp's own quantizer, as the published files are made.
  test::TempDir tmp;
  for (const char* quant : {"Q8_0", "Q4_K_M"}) {
    MakeOptions o;
    o.dir = tmp.path() / quant;
    o.seed = 3;
    o.preset = "small";  // rows of 256: the K-quants apply
    o.quant = quant;
    const MadeModel m = make_test_model(o);
    const std::string bytes = test::read_bytes(m.backbone);
    EXPECT_LT(bytes.size(), std::filesystem::file_size(test::tiny_model().backbone) * 4) << quant;
    llama_model_params mp = llama_model_default_params();
    mp.use_extra_bufts = false;
    backbone::LlamaModelPtr model(llama_model_load_from_file(m.backbone.c_str(), mp));
    ASSERT_TRUE(model) << quant;
    char desc[128] = {0};
    llama_model_desc(model.get(), desc, sizeof desc);
    EXPECT_NE(std::string(desc).find(std::string(quant).substr(0, 2)), std::string::npos)
        << quant << ": " << desc;
  }
  MakeOptions bad;
  bad.dir = tmp.path() / "bad";
  bad.quant = "Q3_X";
  EXPECT_THROW(make_test_model(bad), Error);
}

TEST(MakeTestModel, MissingVocabularyIsAModelError) {
  test::TempDir tmp;
  MakeOptions o;
  o.dir = tmp.path();
  o.vocab_gguf = tmp.path() / "no-such-vocab.gguf";
  EXPECT_THROW(make_test_model(o), clef::Error);
}

}  // namespace
}  // namespace clef::testmodel
