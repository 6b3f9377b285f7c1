// The reference's own pixels: for every image run of the coreai oracle fixture whose drawn image
// is in tests/data/oracle/coreai/images, the sha256 of clef's pixel_values equals the fixture's
// pixel_values_sha256 (g256/g448: Pillow BICUBIC to 256x256 / 448x448 first, as the oracle did;
// native: the processor's smart resize with torch's uint8 antialiased bicubic). The grid fields
// (resized_hw, grid_thw, merged_hw, n_image_tokens, rope_shift_amount) are checked on every image
// run, photographs included (from image_size_in).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <map>
#include <string>

#include "media/decode.hpp"
#include "sha256.hpp"
#include "support/test_files.hpp"
#include "vision/grid.hpp"
#include "vision/processor.hpp"
#include "vision/resample.hpp"

namespace clef::vision {
namespace {

using test::data_path;
using test::read_bytes;
using test::sha256_hex;

rapidjson::Document load_fixture() {
  const auto bytes = read_bytes(data_path("oracle/coreai/fixture.json"));
  rapidjson::Document doc;
  doc.Parse(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (doc.HasParseError()) throw std::runtime_error("fixture.json does not parse");
  return doc;
}

std::pair<int, int> pair_of(const rapidjson::Value& v) {
  return {v[0].GetInt(), v[1].GetInt()};
}

ProcessedImage run_arm(const media::RgbImage& rgb, const std::string& arm) {
  if (arm == "native") return preprocess_image(rgb);  // torch kernel, as the processor resizes
  const int side = std::stoi(arm.substr(1));          // g256 / g448: Pillow first
  return preprocess_image(resize_bicubic(rgb, side, side, ResampleKind::pillow_bicubic));
}

TEST(CoreaiPixels, AllDrawnImageHashesMatchTheReference) {
  const rapidjson::Document fx = load_fixture();
  std::map<std::string, std::string> rgb_sha;
  for (const auto& img : fx["images"].GetArray()) {
    rgb_sha[img["file"].GetString()] = img["rgb_sha256"].GetString();
  }
  int checked = 0;
  int matched = 0;
  std::map<std::string, int> per_arm;
  for (const auto& run : fx["runs"].GetArray()) {
    if (!run.HasMember("pixel_values_sha256") || !run["pixel_values_sha256"].IsString()) continue;
    const std::string file = run["image_files"][0].GetString();
    const std::string path = data_path("oracle/coreai/images/" + file);
    if (!std::filesystem::exists(path)) continue;  // the 4 photographs are not shipped
    const std::string arm = run["arm"].GetString();
    SCOPED_TRACE(std::string(run["id"].GetString()) + " " + arm + " " + file);
    const media::RgbImage rgb = media::decode_image(read_bytes(path));
    ASSERT_EQ(sha256_hex(rgb.rgb.data(), rgb.rgb.size()), rgb_sha.at(file));
    const ProcessedImage p = run_arm(rgb, arm);
    ++checked;
    EXPECT_EQ(std::make_pair(p.resized_height, p.resized_width), pair_of(run["resized_hw"]));
    EXPECT_EQ(p.pixel_values.rows, run["pixel_values_shape"][0].GetInt());
    EXPECT_EQ(p.pixel_values.cols, run["pixel_values_shape"][1].GetInt());
    const std::string got = sha256_hex(p.pixel_values.data.data(), p.pixel_values.data.size() * 4);
    EXPECT_EQ(got, run["pixel_values_sha256"].GetString());
    if (got == run["pixel_values_sha256"].GetString()) {
      ++matched;
      ++per_arm[arm];
    }
  }
  EXPECT_EQ(checked, 30);
  EXPECT_EQ(matched, 30);
  EXPECT_EQ(per_arm["g256"], 10);
  EXPECT_EQ(per_arm["g448"], 10);
  EXPECT_EQ(per_arm["native"], 10);
  std::printf("coreai pixel hashes: %d of %d match (g256 %d, g448 %d, native %d)\n", matched,
              checked, per_arm["g256"], per_arm["g448"], per_arm["native"]);
}

TEST(CoreaiPixels, GridFieldsOfEveryImageRun) {
  const rapidjson::Document fx = load_fixture();
  int checked = 0;
  for (const auto& run : fx["runs"].GetArray()) {
    if (!run.HasMember("grid_thw") || !run["grid_thw"].IsArray()) continue;
    SCOPED_TRACE(std::string(run["id"].GetString()) + " " + run["arm"].GetString());
    const auto [w, h] = pair_of(run["image_size_fed"]);  // [width, height] as PIL sizes are
    const ImageGrid g = image_grid_for_input(h, w);
    const auto& thw = run["grid_thw"];
    EXPECT_EQ(g.grid_t, thw[0].GetInt());
    EXPECT_EQ(g.grid_h, thw[1].GetInt());
    EXPECT_EQ(g.grid_w, thw[2].GetInt());
    EXPECT_EQ(std::make_pair(g.merged_h, g.merged_w), pair_of(run["merged_hw"]));
    EXPECT_EQ(g.n_image_tokens(), run["n_image_tokens"].GetInt());
    EXPECT_EQ(g.rope_shift_amount(), run["rope_shift_amount"].GetInt());
    EXPECT_EQ(std::make_pair(g.grid_h * 16, g.grid_w * 16), pair_of(run["resized_hw"]));
    ++checked;
  }
  EXPECT_EQ(checked, 42);
}

}  // namespace
}  // namespace clef::vision
