// Which head a file is: the published heads' SHA-256 (the same facts as the registry's pins), a
// head of one's own, and what `clef tune` wrote into one.
#include "artifact/head_identity.hpp"

#include <gtest/gtest.h>

#include "head/head_parameters.hpp"
#include "head/safetensors_writer.hpp"
#include "json/parse.hpp"
#include "support/tiny_model.hpp"

namespace clef::artifact {
namespace {

TEST(HeadIdentity, ThePublishedHashesAreTheRegistrysPins) {
  const json::Value registry = json::parse(
      test::read_bytes(std::filesystem::path(CLEF_SOURCE_DIR) / "registry" / "models.json"));
  std::size_t pins = 0;
  for (const auto& [name, model] : registry.find("models")->members()) {
    for (const auto& [variant, v] : model.find("variants")->members()) {
      for (const json::Value& f : v.find("files")->items()) {
        const json::Value* sha = f.find("sha256");
        if (f.find("role")->as_string() != "head" || sha == nullptr) continue;
        const PublishedHead* h = published_head_with_sha256(sha->as_string());
        ASSERT_NE(h, nullptr) << name << ":" << variant;
        EXPECT_EQ(h->id, name);
        EXPECT_EQ(h->repository, f.find("repository")->as_string());
        ++pins;
      }
    }
  }
  EXPECT_GE(pins, 2u);
  EXPECT_EQ(published_head_with_sha256(std::string(64, '0')), nullptr);
}

TEST(HeadIdentity, AHeadOfOnesOwnAndATunedOne) {
  const auto& m = test::tiny_model();
  const HeadIdentity own = identify_head(m.head);
  EXPECT_EQ(own.sha256.size(), 64u);
  EXPECT_EQ(own.published, nullptr);
  EXPECT_EQ(own.describe(), "sha256 " + own.sha256.substr(0, 12) + "...: not a published head");

  test::TempDir dir("clef-head-identity");
  head::SafetensorsWriter w;
  w.set_metadata(kTuneNoteKey, "epoch 17");
  w.set_metadata(kTunedFromKey, published_heads()[0].head_sha256);
  w.add("residual_gate", {}, {0.5f});
  w.write(dir.path() / "h.safetensors", head::SafetensorsDtype::f32);
  const HeadIdentity tuned = identify_head(dir.path() / "h.safetensors");
  EXPECT_EQ(tuned.tune_note, "epoch 17");
  EXPECT_EQ(tuned.describe(),
            "sha256 " + tuned.sha256.substr(0, 12) +
                "...: not a published head; clef tune epoch 17, tuned from clef-flash's published "
                "head (19cdcec8c81d...)");
}

}  // namespace
}  // namespace clef::artifact
