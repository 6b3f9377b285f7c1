// smart_resize, the patch grid, image-token counts and rope shifts equal transformers' formula
// (values computed by the Python reference formula in scripts/gen_vision_expected.py) for the
// sizes the issue names (224x224, 640x480, 960x1280, 330x441, 4000x3000, 10x1000) and edge cases
// (round half to even, max/min pixel branches, aspect ratio 200), plus overridden limits.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/test_files.hpp"
#include "util/error.hpp"
#include "vision/grid.hpp"
#include "vision/smart_resize.hpp"

namespace clef::vision {
namespace {

using test::data_path;

TEST(Grid, SmartResizeAndGridEqualTheReferenceFormula) {
  std::ifstream f(data_path("vision/smart_resize_cases.txt"));
  std::string line;
  int n = 0;
  int errors = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    SCOPED_TRACE(line);
    std::istringstream in(line);
    int h, w;
    in >> h >> w;
    std::string third;
    in >> third;
    ++n;
    if (third == "error") {
      ++errors;
      try {
        image_grid_for_input(h, w);
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_NE(std::string(e.what()).find("aspect ratio"), std::string::npos);
      }
      continue;
    }
    const int rh = std::stoi(third);
    int rw, gt, gh, gw, H, W, tokens, shift;
    in >> rw >> gt >> gh >> gw >> H >> W >> tokens >> shift;
    const ResizedSize r = smart_resize(h, w, 32, 65536, 16777216);
    EXPECT_EQ(r.height, rh);
    EXPECT_EQ(r.width, rw);
    const ImageGrid g = image_grid_for_input(h, w);
    EXPECT_EQ(g.grid_t, gt);
    EXPECT_EQ(g.grid_h, gh);
    EXPECT_EQ(g.grid_w, gw);
    EXPECT_EQ(g.merged_h, H);
    EXPECT_EQ(g.merged_w, W);
    EXPECT_EQ(g.n_image_tokens(), tokens);
    EXPECT_EQ(g.rope_shift_amount(), shift);
  }
  EXPECT_GE(n, 39);
  EXPECT_EQ(errors, 3);
}

TEST(Grid, OverriddenPixelLimits) {
  std::ifstream f(data_path("vision/smart_resize_overrides.txt"));
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    SCOPED_TRACE(line);
    std::istringstream in(line);
    int h, w, rh, rw;
    std::int64_t mn, mx;
    in >> h >> w >> mn >> mx >> rh >> rw;
    ProcessorConfig c;
    c.min_pixels = mn;
    c.max_pixels = mx;
    const ImageGrid g = image_grid_for_input(h, w, c);
    EXPECT_EQ(g.grid_h * 16, rh);
    EXPECT_EQ(g.grid_w * 16, rw);
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(Grid, NamedSizes) {
  // Worked by hand from the formula (contract section 4: shift = N - max(H, W)).
  const ImageGrid a = image_grid_for_input(224, 224);  // round(7) = 7 -> 224^2 < min -> 256^2
  EXPECT_EQ(a.n_image_tokens(), 64);
  EXPECT_EQ(a.rope_shift_amount(), 56);
  const ImageGrid b = image_grid_for_input(480, 640);  // 15 x 20 tokens
  EXPECT_EQ(b.merged_h, 15);
  EXPECT_EQ(b.merged_w, 20);
  EXPECT_EQ(b.rope_shift_amount(), 280);
}

TEST(Grid, BadResizedSizesAndSides) {
  EXPECT_THROW(image_grid(250, 256), Error);
  EXPECT_THROW(image_grid(0, 256), Error);
  EXPECT_THROW(smart_resize(0, 10, 32, 65536, 16777216), Error);
  EXPECT_THROW(smart_resize(10, 2001, 32, 65536, 16777216), Error);  // 200.1 : 1
  EXPECT_NO_THROW(smart_resize(10, 2000, 32, 65536, 16777216));      // exactly 200 : 1
}

}  // namespace
}  // namespace clef::vision
