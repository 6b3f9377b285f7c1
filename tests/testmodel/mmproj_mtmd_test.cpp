// The tiny mmproj loads in mtmd against the tiny backbone and encodes an image to finite rows of
// the backbone's width.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "llama.h"
#include "mtmd.h"
#include "support/tiny_model.hpp"

namespace clef::testmodel {
namespace {

struct ModelFree {
  void operator()(llama_model* m) const { llama_model_free(m); }
};
struct MtmdFree {
  void operator()(mtmd_context* c) const { mtmd_free(c); }
};
struct BitmapFree {
  void operator()(mtmd_bitmap* b) const { mtmd_bitmap_free(b); }
};
struct ChunksFree {
  void operator()(mtmd_input_chunks* c) const { mtmd_input_chunks_free(c); }
};

TEST(TinyMmproj, LoadsInMtmdAndEncodesAnImage) {
  test::ensure_llama_backend();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  const std::unique_ptr<llama_model, ModelFree> model(
      llama_model_load_from_file(test::tiny_model().backbone.string().c_str(), mp));
  ASSERT_NE(model, nullptr);

  mtmd_context_params params = mtmd_context_params_default();
  params.use_gpu = false;
  params.n_threads = 1;
  params.warmup = false;
  params.print_timings = false;
  const std::unique_ptr<mtmd_context, MtmdFree> mctx(
      mtmd_init_from_file(test::tiny_model().mmproj.string().c_str(), model.get(), params));
  ASSERT_NE(mctx, nullptr);
  EXPECT_TRUE(mtmd_support_vision(mctx.get()));
  EXPECT_TRUE(mtmd_decode_use_mrope(mctx.get()));

  // A 96 x 64 RGB gradient with a bright square.
  const std::uint32_t nx = 96, ny = 64;
  std::vector<unsigned char> rgb(nx * ny * 3);
  for (std::uint32_t y = 0; y < ny; ++y) {
    for (std::uint32_t x = 0; x < nx; ++x) {
      unsigned char* px = &rgb[(y * nx + x) * 3];
      const bool square = x > 20 && x < 50 && y > 10 && y < 40;
      px[0] = static_cast<unsigned char>(square ? 250 : x * 2);
      px[1] = static_cast<unsigned char>(square ? 240 : y * 3);
      px[2] = static_cast<unsigned char>((x + y) % 256);
    }
  }
  const std::unique_ptr<mtmd_bitmap, BitmapFree> bitmap(mtmd_bitmap_init(nx, ny, rgb.data()));
  ASSERT_NE(bitmap, nullptr);
  const std::unique_ptr<mtmd_input_chunks, ChunksFree> chunks(mtmd_input_chunks_init());
  mtmd_input_text text{};
  text.text = mtmd_default_marker();
  text.text_len = std::strlen(text.text);
  text.add_special = false;
  text.parse_special = true;
  const mtmd_bitmap* bitmaps[] = {bitmap.get()};
  ASSERT_EQ(mtmd_tokenize(mctx.get(), chunks.get(), &text, bitmaps, 1), 0);

  const mtmd_input_chunk* image = nullptr;
  for (std::size_t i = 0; i < mtmd_input_chunks_size(chunks.get()); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks.get(), i);
    if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_IMAGE) image = c;
  }
  ASSERT_NE(image, nullptr);
  const std::size_t n_tokens = mtmd_input_chunk_get_n_tokens(image);
  EXPECT_GE(n_tokens, 8u);  // clip.cpp's qwen3vl minimum of 8 image tokens
  ASSERT_EQ(mtmd_encode_chunk(mctx.get(), image), 0);
  const float* embd = mtmd_get_output_embd(mctx.get());
  ASSERT_NE(embd, nullptr);
  const int n_embd = llama_model_n_embd_inp(model.get());
  std::size_t non_finite = 0;
  double max_abs = 0;
  for (std::size_t i = 0; i < n_tokens * n_embd; ++i) {
    if (!std::isfinite(embd[i])) ++non_finite;
    max_abs = std::max(max_abs, std::fabs(double(embd[i])));
  }
  EXPECT_EQ(non_finite, 0u);
  EXPECT_GT(max_abs, 1e-3);
  EXPECT_LT(max_abs, 1e3);
  // The bright square makes some merged patches differ from others.
  double diff = 0;
  for (int j = 0; j < n_embd; ++j)
    diff += std::fabs(double(embd[j]) - embd[(n_tokens - 1) * n_embd + j]);
  EXPECT_GT(diff, 1e-3);
}

}  // namespace
}  // namespace clef::testmodel
