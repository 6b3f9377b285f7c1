// make_test_model: the same seed gives byte-identical files, another seed different weights.
#include <gtest/gtest.h>

#include "testmodel/make_test_model.hpp"
#include "support/tiny_model.hpp"
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

TEST(MakeTestModel, MissingVocabularyIsAModelError) {
  test::TempDir tmp;
  MakeOptions o;
  o.dir = tmp.path();
  o.vocab_gguf = tmp.path() / "no-such-vocab.gguf";
  EXPECT_THROW(make_test_model(o), clef::Error);
}

}  // namespace
}  // namespace clef::testmodel
