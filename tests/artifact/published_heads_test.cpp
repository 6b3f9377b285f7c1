// The published joint schema heads `clef info` names a head after (issue 44): clef-flash's
// (hidden 4,096) and Clef 27B's (hidden 5,120, the other fields as clef-flash's); a head that is
// neither is named after the nearest, with its differences.
#include "artifact/reference.hpp"

#include <gtest/gtest.h>

namespace clef::artifact {
namespace {

head::HeadConfig config(std::int64_t hidden, std::int64_t width = 1024) {
  head::HeadConfig c;
  c.hidden_size = hidden;
  c.width = width;
  c.routing_layers = 2;
  c.layers = 4;
  c.heads = 16;
  c.feedforward = 4096;
  return c;
}

TEST(PublishedHeads, AreClefFlashsAndClef27Bs) {
  ASSERT_EQ(published_heads().size(), 2u);
  EXPECT_EQ(published_heads()[0].model, "clef-flash");
  EXPECT_EQ(published_heads()[0].config.hidden_size, 4096);
  EXPECT_EQ(published_heads()[1].model, "Clef 27B");
  EXPECT_EQ(published_heads()[1].repository, "Cloudflare/clef");
  EXPECT_EQ(published_heads()[1].config.hidden_size, 5120);
  EXPECT_EQ(published_heads()[0].id, "clef-flash") << "the registry's model names";
  EXPECT_EQ(published_heads()[1].id, "clef");
}

TEST(PublishedHeads, NameTheServedModelOnlyWhenTheConfigIsTheirsExactly) {
  clef::head::HeadConfig config = published_heads()[1].config;
  EXPECT_EQ(served_model_id(config), "clef") << "a --model-dir of Clef 27B's files";
  EXPECT_EQ(served_model_id(published_heads()[0].config), "clef-flash");
  config.width = 32;  // a test model's head nearest to Clef 27B's
  EXPECT_EQ(served_model_id(config), "clef-flash") << "the default name, as before";
}

TEST(PublishedHeads, EachReleaseConfigIsItsOwnAndNoDifference) {
  const HeadMatch flash = match_published_head(config(4096));
  EXPECT_TRUE(flash.exact);
  EXPECT_EQ(flash.head->model, "clef-flash");
  const HeadMatch big = match_published_head(config(5120));
  EXPECT_TRUE(big.exact);
  EXPECT_EQ(big.head->model, "Clef 27B");
  EXPECT_TRUE(config_differences(config(5120)).empty()) << "the 27B's head is no difference";
}

TEST(PublishedHeads, AnotherConfigIsNamedAfterTheNearest) {
  const HeadMatch m = match_published_head(config(5120, 512));
  EXPECT_FALSE(m.exact);
  EXPECT_EQ(m.head->model, "Clef 27B");
  EXPECT_EQ(config_differences(config(5120, 512)),
            std::vector<std::string>{"head width 512 (Clef 27B 1024)"});
  // A test model's head (hidden 256, width 32): nearest by fields, then by hidden size.
  EXPECT_EQ(match_published_head(config(256, 32)).head->model, "clef-flash");
  EXPECT_EQ(config_differences(config(256, 32)),
            (std::vector<std::string>{"head hidden_size 256 (clef-flash 4096)",
                                      "head width 32 (clef-flash 1024)"}));
}

}  // namespace
}  // namespace clef::artifact
