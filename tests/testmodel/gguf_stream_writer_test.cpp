// GgufStreamWriter: what it writes reads back through ggml's own GGUF reader with the values our
// generator draws (F32 exact, F16/BF16/Q8_0 within their rounding), at aligned offsets.
#include "testmodel/gguf_stream_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "support/gguf_rewrite.hpp"
#include "support/tiny_model.hpp"

namespace clef::testmodel {
namespace {

TEST(GgufStreamWriter, ValuesReadBackThroughGgml) {
  test::TempDir dir;
  const std::filesystem::path path = dir.path() / "t.gguf";
  GgufStreamWriter w("unit");
  gguf_set_val_str(w.kv(), "general.architecture", "test");
  gguf_set_val_u32(w.kv(), "test.answer", 42);
  const Init law = Init::normal(0.25, 1.5);
  const std::vector<std::pair<std::string, ggml_type>> cases = {{"f32", GGML_TYPE_F32},
                                                                {"f16", GGML_TYPE_F16},
                                                                {"bf16", GGML_TYPE_BF16},
                                                                {"q8_0", GGML_TYPE_Q8_0}};
  for (const auto& [name, type] : cases) w.add_tensor({name, {64, 33}, type, law});
  w.add_tensor({"vec", {7}, GGML_TYPE_F32, Init::uniform(-1, 1)});
  w.write(path, 99);

  const test::LoadedGguf loaded = test::load_gguf_with_data(path);
  const gguf_context* kv = loaded.gguf.get();
  ggml_context* data = loaded.data.get();
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(gguf_get_val_u32(kv, gguf_find_key(kv, "test.answer")), 42u);
  ASSERT_EQ(gguf_get_n_tensors(kv), 5);
  const std::size_t align = gguf_get_alignment(kv);
  EXPECT_EQ(gguf_get_data_offset(kv) % align, 0u);

  for (const auto& [name, type] : cases) {
    SCOPED_TRACE(name);
    ggml_tensor* t = ggml_get_tensor(data, name.c_str());
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type, type);
    EXPECT_EQ(gguf_get_tensor_offset(kv, gguf_find_tensor(kv, name.c_str())) % align, 0u);
    std::vector<float> expect(64 * 33), got(64 * 33);
    Rng rng(derive_seed(99, "unit/" + name));
    draw(law, rng, expect.data(), expect.size());
    if (type == GGML_TYPE_F32) {
      std::memcpy(got.data(), t->data, got.size() * sizeof(float));
    } else {
      ggml_get_type_traits(type)->to_float(t->data, got.data(), 64 * 33);
    }
    const double tol = type == GGML_TYPE_F32 ? 0.0 : type == GGML_TYPE_Q8_0 ? 0.05 : 0.04;
    double max_err = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      max_err =
          std::max(max_err, std::fabs(double(got[i]) - expect[i]) / (1 + std::fabs(expect[i])));
    }
    EXPECT_LE(max_err, tol);
  }
}

TEST(GgufStreamWriter, PooledQuantBlocksFollowTheLawAndLeaveOtherTypesAlone) {
  // A 9B-shaped model is written from a pool of quantized blocks: the values still follow each
  // tensor's law (mean and spread), blocks differ, and F32 tensors are drawn as before.
  test::TempDir dir;
  const std::filesystem::path path = dir.path() / "pooled.gguf";
  GgufStreamWriter w("unit");
  w.set_pooled_quant_blocks(true);
  gguf_set_val_str(w.kv(), "general.architecture", "test");
  const Init law = Init::normal(0.0, 0.02);
  w.add_tensor({"q4k", {1024, 512}, GGML_TYPE_Q4_K, law});
  w.add_tensor({"f32", {64, 3}, GGML_TYPE_F32, law});
  w.write(path, 5);

  const test::LoadedGguf loaded = test::load_gguf_with_data(path);
  ggml_tensor* q = ggml_get_tensor(loaded.data.get(), "q4k");
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->type, GGML_TYPE_Q4_K);
  std::vector<float> v(1024 * 512);
  ggml_get_type_traits(GGML_TYPE_Q4_K)->to_float(q->data, v.data(), static_cast<int64_t>(v.size()));
  double sum = 0;
  double sq = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += double(x) * x;
  }
  const double mean = sum / v.size();
  const double sd = std::sqrt(sq / v.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(sd, 0.02, 0.004);
  // Rows are not copies of one another.
  EXPECT_NE(std::memcmp(v.data(), v.data() + 1024, 1024 * sizeof(float)), 0);
  ggml_tensor* f = ggml_get_tensor(loaded.data.get(), "f32");
  std::vector<float> expect(64 * 3);
  Rng rng(derive_seed(5, "unit/f32"));
  draw(law, rng, expect.data(), expect.size());
  EXPECT_EQ(std::memcmp(f->data, expect.data(), expect.size() * sizeof(float)), 0);
}

TEST(GgufStreamWriter, RejectsBadTensors) {
  GgufStreamWriter w("unit");
  w.add_tensor({"a", {32}, GGML_TYPE_F32, Init::normal(0, 1)});
  EXPECT_THROW(w.add_tensor({"a", {32}, GGML_TYPE_F32, Init::normal(0, 1)}), std::invalid_argument);
  EXPECT_THROW(w.add_tensor({"q", {33, 2}, GGML_TYPE_Q8_0, Init::normal(0, 1)}),
               std::invalid_argument);
  EXPECT_THROW(w.add_tensor({std::string(80, 'n'), {4}, GGML_TYPE_F32, Init::normal(0, 1)}),
               std::invalid_argument);
}

}  // namespace
}  // namespace clef::testmodel
