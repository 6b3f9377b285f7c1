// M-RoPE positions of every token against the contract's closed form (section 4) for one and
// two images, and libllama's section-major IMROPE layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "backbone/mrope.hpp"
#include "util/error.hpp"

namespace clef::backbone {
namespace {

RopePosition text(std::int64_t p) {
  const auto v = static_cast<std::int32_t>(p);
  return {v, v, v, v};
}

TEST(Mrope, TextOnlyIsPlain) {
  const auto pos = mrope_positions(50, {});
  ASSERT_EQ(pos.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(pos[i], text(i));
}

TEST(Mrope, OneImageEveryTokenMatchesTheClosedForm) {
  // prefix of P = 36 tokens, <|vision_start|> at index P, image H x W from index P+1.
  for (auto [H, W] : {std::pair{8, 8}, std::pair{15, 20}, std::pair{20, 15}, std::pair{1, 80}}) {
    SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W));
    const std::int64_t P = 36, N = H * W, T = P + 1 + N + 1 + 300;
    const std::vector<ImageSpan> spans = {{static_cast<std::size_t>(P + 1), H, W}};
    const auto pos = mrope_positions(static_cast<std::size_t>(T), spans);
    ASSERT_EQ(pos.size(), static_cast<std::size_t>(T));
    for (std::int64_t i = 0; i < T; ++i) {
      RopePosition want;
      if (i <= P) {
        want = text(i);
      } else if (i <= P + N) {
        const std::int64_t k = i - P - 1;
        want = {static_cast<std::int32_t>(P + 1), static_cast<std::int32_t>(P + 1 + k / W),
                static_cast<std::int32_t>(P + 1 + k % W), 0};
      } else {
        want = text(i - (N - std::max(H, W)));
      }
      ASSERT_EQ(pos[i], want) << "token " << i;
    }
    // <|vision_end|> sits right after the image's largest position.
    EXPECT_EQ(pos[P + N + 1].t, P + 1 + std::max(H, W));
  }
}

TEST(Mrope, TwoImagesOneAfterAnother) {
  // [prefix P][vs][img1 N1][ve][vs][img2 N2][ve]["\n" + state ...]
  const std::int64_t P = 36, H1 = 8, W1 = 10, H2 = 15, W2 = 4;
  const std::int64_t N1 = H1 * W1, N2 = H2 * W2;
  const std::int64_t s1 = P + 1;        // first image token of image 1
  const std::int64_t s2 = s1 + N1 + 2;  // after <|vision_end|> and <|vision_start|>
  const std::int64_t T = s2 + N2 + 1 + 120;
  const std::vector<ImageSpan> spans = {{static_cast<std::size_t>(s1), H1, W1},
                                        {static_cast<std::size_t>(s2), H2, W2}};
  const auto pos = mrope_positions(static_cast<std::size_t>(T), spans);
  const std::int64_t shift1 = N1 - std::max(H1, W1);
  const std::int64_t shift2 = N2 - std::max(H2, W2);
  for (std::int64_t i = 0; i < T; ++i) {
    RopePosition want;
    if (i < s1) {
      want = text(i);
    } else if (i < s1 + N1) {
      const std::int64_t k = i - s1, b = s1;
      want = {static_cast<std::int32_t>(b), static_cast<std::int32_t>(b + k / W1),
              static_cast<std::int32_t>(b + k % W1), 0};
    } else if (i < s2) {
      want = text(i - shift1);
    } else if (i < s2 + N2) {
      const std::int64_t k = i - s2, b = s2 - shift1;
      want = {static_cast<std::int32_t>(b), static_cast<std::int32_t>(b + k / W2),
              static_cast<std::int32_t>(b + k % W2), 0};
    } else {
      want = text(i - shift1 - shift2);
    }
    ASSERT_EQ(pos[i], want) << "token " << i;
  }
  // Each image advances the position by max(H, W): after image 1 the next token is s1 + 10.
  EXPECT_EQ(pos[s1 + N1].t, s1 + std::max(H1, W1));
  EXPECT_EQ(pos[s2 + N2].t, pos[s2 - 1].t + 1 + std::max(H2, W2));
}

TEST(Mrope, LlamaLayoutIsSectionMajor) {
  const std::vector<ImageSpan> spans = {{2, 2, 3}};
  const auto pos = mrope_positions(10, spans);
  const auto layout = llama_mrope_layout(pos);
  ASSERT_EQ(layout.size(), 40u);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    EXPECT_EQ(layout[i], pos[i].t);
    EXPECT_EQ(layout[10 + i], pos[i].h);
    EXPECT_EQ(layout[20 + i], pos[i].w);
    EXPECT_EQ(layout[30 + i], pos[i].z);
  }
  // Image token k = 4 (row 1, column 1) of the 2 x 3 grid starting at position 2.
  EXPECT_EQ(pos[6], (RopePosition{2, 3, 3, 0}));
  // Text after the image: index 8 -> 8 - (6 - 3) = 5 on every section, z included.
  EXPECT_EQ(pos[8], text(5));
}

TEST(Mrope, BadSpansThrow) {
  EXPECT_THROW(mrope_positions(10, std::vector<ImageSpan>{{0, 1, 1}}), Error);
  EXPECT_THROW(mrope_positions(10, std::vector<ImageSpan>{{5, 2, 3}}), Error);  // runs past
  EXPECT_THROW(mrope_positions(20, std::vector<ImageSpan>{{5, 1, 2}, {6, 1, 1}}), Error);
  EXPECT_THROW(mrope_positions(20, std::vector<ImageSpan>{{5, 0, 2}}), Error);
}

}  // namespace
}  // namespace clef::backbone
