// LexicalTable reads output.weight rows from a GGUF and dequantizes them exactly as ggml does.
// The test writes small GGUFs with ggml's gguf API in every storage type clef meets
// (F32, F16, BF16, Q8_0, Q6_K, Q4_K) and compares rows and span means.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include <ggml.h>
#include <gguf.h>

#include "lexical/lexical_table.hpp"
#include "util/error.hpp"

namespace {

constexpr int kEmbd = 256;
constexpr int kVocab = 40;

std::vector<float> reference_weights() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-0.25f, 0.25f);
  std::vector<float> w(static_cast<std::size_t>(kEmbd) * kVocab);
  for (float& v : w) v = dist(rng);
  return w;
}

/// Writes a GGUF holding `name` = W stored as `type`; returns the bytes ggml stored (quantized).
std::vector<uint8_t> write_gguf(const std::string& path, ggml_type type, const std::string& name,
                                const std::vector<float>& w) {
  const size_t bytes = ggml_row_size(type, kEmbd) * kVocab;
  std::vector<uint8_t> data(bytes);
  if (type == GGML_TYPE_F32) {
    std::memcpy(data.data(), w.data(), bytes);
  } else {
    ggml_quantize_chunk(type, w.data(), data.data(), 0, kVocab, kEmbd, nullptr);
  }
  ggml_init_params ip{ggml_tensor_overhead() * 4, nullptr, true};
  std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init(ip), &ggml_free);
  ggml_tensor* t = ggml_new_tensor_2d(ctx.get(), type, kEmbd, kVocab);
  ggml_set_name(t, name.c_str());
  t->data = data.data();
  std::unique_ptr<gguf_context, decltype(&gguf_free)> g(gguf_init_empty(), &gguf_free);
  gguf_set_val_str(g.get(), "general.architecture", "qwen35");
  gguf_add_tensor(g.get(), t);
  EXPECT_TRUE(gguf_write_to_file(g.get(), path.c_str(), false));
  return data;
}

class LexicalTableTest : public ::testing::TestWithParam<ggml_type> {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("clef_lexical_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

TEST_P(LexicalTableTest, RowsEqualGgmlDequantization) {
  const ggml_type type = GetParam();
  const auto w = reference_weights();
  const std::string path = (dir_ / "m.gguf").string();
  const auto stored = write_gguf(path, type, "output.weight", w);

  clef::lexical::LexicalTable table(path);
  EXPECT_EQ(table.n_embd(), kEmbd);
  EXPECT_EQ(table.n_vocab(), kVocab);
  EXPECT_EQ(table.type_name(), ggml_type_name(type));

  // Expected: ggml's own whole-tensor dequantization of the stored bytes.
  std::vector<float> expected(w.size());
  if (type == GGML_TYPE_F32) {
    expected = w;
  } else {
    ggml_get_type_traits(type)->to_float(stored.data(), expected.data(),
                                         static_cast<int64_t>(w.size()));
  }
  std::vector<float> row(kEmbd);
  for (int id : {0, 1, 17, kVocab - 1}) {
    table.row(id, row);
    for (int k = 0; k < kEmbd; ++k) {
      ASSERT_EQ(row[k], expected[static_cast<size_t>(id) * kEmbd + k]) << "id " << id << " k " << k;
    }
  }

  // Mean over a span with a repeated id: each occurrence counts.
  const std::vector<int32_t> ids = {3, 9, 3};
  const auto mean = table.mean_row(ids);
  for (int k = 0; k < kEmbd; ++k) {
    const float sum = (expected[3 * kEmbd + k] + expected[9 * kEmbd + k]) + expected[3 * kEmbd + k];
    ASSERT_EQ(mean[k], sum / 3.0f);
  }
  // Quantized rows stay close to the f32 weights.
  const double tolerance = type == GGML_TYPE_Q4_K ? 2e-2 : type == GGML_TYPE_Q6_K ? 5e-3 : 2e-3;
  table.row(5, row);
  for (int k = 0; k < kEmbd; ++k) ASSERT_NEAR(row[k], w[5 * kEmbd + k], tolerance);
}

INSTANTIATE_TEST_SUITE_P(Types, LexicalTableTest,
                         ::testing::Values(GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16,
                                           GGML_TYPE_Q8_0, GGML_TYPE_Q6_K, GGML_TYPE_Q4_K),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

TEST_F(LexicalTableTest, OutOfVocabularyIdIsRefused) {
  const std::string path = (dir_ / "m.gguf").string();
  write_gguf(path, GGML_TYPE_F32, "output.weight", reference_weights());
  clef::lexical::LexicalTable table(path);
  std::vector<float> row(kEmbd);
  EXPECT_THROW(table.row(kVocab, row), clef::Error);
  EXPECT_THROW(table.row(-1, row), clef::Error);
  EXPECT_THROW(table.mean_row({}), clef::Error);
}

TEST_F(LexicalTableTest, TiedHeadIsRefusedWithAClearMessage) {
  const std::string path = (dir_ / "tied.gguf").string();
  write_gguf(path, GGML_TYPE_F32, "token_embd.weight", reference_weights());
  try {
    clef::lexical::LexicalTable table(path);
    FAIL() << "a GGUF without output.weight must be refused";
  } catch (const clef::Error& e) {
    EXPECT_NE(std::string(e.what()).find("output.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tied"), std::string::npos) << e.what();
  }
}

TEST_F(LexicalTableTest, NonGgufFileIsRefused) {
  const std::string path = (dir_ / "not.gguf").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("this is not a gguf file", f);
    std::fclose(f);
  }
  EXPECT_THROW(clef::lexical::LexicalTable table(path), clef::Error);
  EXPECT_THROW(clef::lexical::LexicalTable table((dir_ / "missing.gguf").string()), clef::Error);
}

}  // namespace
