// Pillow-exact bicubic equals Pillow's own Image.resize(BICUBIC) output byte for byte on noise
// and smooth sources, down, up, one axis, and to 1x1 (expected bytes from
// scripts/gen_vision_expected.py). The torch kernel is checked bit for bit by the coreai native
// hashes (coreai_pixels_test.cpp). Also: patch layout and channel order, normalization values.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/test_files.hpp"
#include "util/error.hpp"
#include "vision/patches.hpp"
#include "vision/processor.hpp"
#include "vision/resample.hpp"

namespace clef::vision {
namespace {

using test::data_path;
using test::read_bytes;

media::RgbImage load_rgb(const std::string& rel, int w, int h) {
  media::RgbImage img(w, h);
  img.rgb = read_bytes(data_path("vision/" + rel));
  if (img.rgb.size() != static_cast<std::size_t>(w) * h * 3) throw std::runtime_error(rel);
  return img;
}

TEST(Resample, PillowBicubicEqualsPillow) {
  std::ifstream f(data_path("vision/resize_cases.txt"));
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string src, dst;
    int sw, sh, dw, dh;
    in >> src >> sw >> sh >> dst >> dw >> dh;
    SCOPED_TRACE(dst);
    const media::RgbImage out =
        resize_bicubic(load_rgb(src, sw, sh), dw, dh, ResampleKind::pillow_bicubic);
    ASSERT_EQ(out.width, dw);
    ASSERT_EQ(out.height, dh);
    EXPECT_EQ(out.rgb, read_bytes(data_path("vision/" + dst)));
    ++n;
  }
  EXPECT_EQ(n, 18);
}

TEST(Resample, SameSizeIsACopyAndBadSizesThrow) {
  const media::RgbImage src = load_rgb("resize/noise_37x29.rgb", 37, 29);
  for (auto kind : {ResampleKind::pillow_bicubic, ResampleKind::torch_bicubic_aa}) {
    EXPECT_EQ(resize_bicubic(src, 37, 29, kind).rgb, src.rgb);
    EXPECT_THROW(resize_bicubic(src, 0, 29, kind), Error);
  }
}

TEST(Resample, TorchAndPillowAgreeOnFlatImagesAndDifferInRounding) {
  // A flat colour stays flat under both (weights sum to 1 in either fixed point).
  media::RgbImage flat(30, 20);
  for (std::size_t i = 0; i < flat.rgb.size(); i += 3) {
    flat.rgb[i] = 200, flat.rgb[i + 1] = 17, flat.rgb[i + 2] = 99;
  }
  for (auto kind : {ResampleKind::pillow_bicubic, ResampleKind::torch_bicubic_aa}) {
    const media::RgbImage out = resize_bicubic(flat, 64, 45, kind);
    for (std::size_t i = 0; i < out.rgb.size(); i += 3) {
      ASSERT_EQ(out.rgb[i], 200);
      ASSERT_EQ(out.rgb[i + 1], 17);
      ASSERT_EQ(out.rgb[i + 2], 99);
    }
  }
  // On noise the two fixed points round some samples differently, by at most 1.
  const media::RgbImage src = load_rgb("resize/noise_37x29.rgb", 37, 29);
  const media::RgbImage a = resize_bicubic(src, 64, 48, ResampleKind::pillow_bicubic);
  const media::RgbImage b = resize_bicubic(src, 64, 48, ResampleKind::torch_bicubic_aa);
  int differ = 0;
  for (std::size_t i = 0; i < a.rgb.size(); ++i) {
    const int d = std::abs(a.rgb[i] - b.rgb[i]);
    EXPECT_LE(d, 1);
    differ += d != 0;
  }
  EXPECT_GT(differ, 0);
}

TEST(Patches, PureRedIsPlusOneInRedMinusOneElsewhere) {
  media::RgbImage red(64, 96);
  for (std::size_t i = 0; i < red.rgb.size(); i += 3) red.rgb[i] = 255;
  const PatchTensor p = make_patches(red);
  ASSERT_EQ(p.rows, 4 * 6);
  ASSERT_EQ(p.cols, 1536);
  for (int r = 0; r < p.rows; ++r) {
    for (int c = 0; c < p.cols; ++c) {
      const float want = c < 512 ? 1.0f : -1.0f;  // channel-major: R plane first (2 x 256)
      ASSERT_EQ(p.data[static_cast<std::size_t>(r) * p.cols + c], want) << r << " " << c;
    }
  }
}

TEST(Patches, MergeBlockMajorOrder) {
  // Each 16x16 patch filled with a value naming its (row, column) in the patch grid.
  const int gh = 4, gw = 6;
  media::RgbImage img(gw * 16, gh * 16);
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      std::uint8_t* px = img.pixel(x, y);
      px[0] = static_cast<std::uint8_t>(y / 16);
      px[1] = static_cast<std::uint8_t>(x / 16);
      px[2] = static_cast<std::uint8_t>((x % 16) + 16 * (y % 16) == 0 ? 255 : 0);
    }
  }
  const PatchTensor p = make_patches(img);
  int row = 0;
  for (int bh = 0; bh < gh / 2; ++bh) {
    for (int bw = 0; bw < gw / 2; ++bw) {
      for (int mh = 0; mh < 2; ++mh) {
        for (int mw = 0; mw < 2; ++mw, ++row) {
          const float* v = &p.data[static_cast<std::size_t>(row) * p.cols];
          EXPECT_EQ(v[0], normalize_sample(bh * 2 + mh)) << row;    // R, t0, pixel 0
          EXPECT_EQ(v[256], normalize_sample(bh * 2 + mh)) << row;  // R, t1 (copy)
          EXPECT_EQ(v[512], normalize_sample(bw * 2 + mw)) << row;  // G, t0
          EXPECT_EQ(v[1024], 1.0f);                                 // B pixel (0,0)
          EXPECT_EQ(v[1025], -1.0f);                                // B pixel (0,1)
        }
      }
    }
  }
}

TEST(Patches, NormalizationIsDoubleThenFloat) {
  for (int x = 0; x < 256; ++x) {
    EXPECT_EQ(normalize_sample(x), static_cast<float>((x / 255.0 - 0.5) / 0.5));
  }
  EXPECT_EQ(normalize_sample(0), -1.0f);
  EXPECT_EQ(normalize_sample(255), 1.0f);
}

TEST(Processor, SidesNotMultiplesOfThirtyTwoAreRefusedByMakePatches) {
  EXPECT_THROW(make_patches(media::RgbImage(48, 32)), Error);
  const ProcessedImage p =
      preprocess_image(media::RgbImage(48, 40));  // smart-resized to 256 x 288?
  EXPECT_EQ(p.resized_height % 32, 0);
  EXPECT_EQ(p.resized_width % 32, 0);
  EXPECT_EQ(p.pixel_values.rows, p.grid.n_patches());
}

}  // namespace
}  // namespace clef::vision
