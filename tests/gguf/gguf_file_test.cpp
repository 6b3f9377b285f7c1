// gguf::GgufFile and copy_keys on GGUFs written with ggml's own gguf API: strict and lenient key
// readers, tensor byte ranges, and the refusals (missing file, no magic, truncated data).
#include "gguf/gguf_file.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/copy_keys.hpp"
#include "util/error.hpp"

namespace clef::gguf {
namespace {

/// A fresh directory for one test, removed afterwards.
class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("clef_gguf_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Writes a GGUF with keys of several types and one F32 tensor "w" of ne [4, 3].
std::filesystem::path write_sample(const std::filesystem::path& dir) {
  const GgufContextPtr g(gguf_init_empty());
  gguf_set_val_str(g.get(), "general.architecture", "qwen35");
  gguf_set_val_u32(g.get(), "a.u32", 7);
  gguf_set_val_i32(g.get(), "a.neg", -3);
  gguf_set_val_f32(g.get(), "a.f32", 0.5f);
  gguf_set_val_bool(g.get(), "a.bool", true);
  const std::int32_t ints[] = {11, 11, 10, 0};
  gguf_set_arr_data(g.get(), "a.ints", GGUF_TYPE_INT32, ints, 4);
  const char* strs[] = {"x", "y"};
  gguf_set_arr_str(g.get(), "tokenizer.strs", strs, 2);
  const GgmlContextPtr ctx(ggml_init({ggml_tensor_overhead() * 2, nullptr, true}));
  ggml_tensor* w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 3);
  ggml_set_name(w, "w");
  std::vector<float> values(12, 1.5f);
  w->data = values.data();
  gguf_add_tensor(g.get(), w);
  const auto path = dir / "sample.gguf";
  EXPECT_TRUE(gguf_write_to_file(g.get(), path.c_str(), false));
  return path;
}

template <typename F>
std::string model_error_of(F&& f) {
  try {
    f();
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::model_error);
    return e.what();
  }
  ADD_FAILURE() << "no model_error";
  return {};
}

TEST(GgufFile, ReadsKeysStrictlyAndLeniently) {
  TempDir dir;
  const GgufFile f(write_sample(dir.path()));
  EXPECT_EQ(f.get_string("general.architecture"), "qwen35");
  EXPECT_EQ(f.get_uint("a.u32"), 7u);
  EXPECT_EQ(f.get_float("a.f32"), 0.5);
  EXPECT_FALSE(f.get_uint("a.missing"));
  // Strict readers refuse another type or a negative integer, naming the key.
  EXPECT_NE(model_error_of([&] { f.get_uint("a.neg"); }).find("a.neg is negative"),
            std::string::npos);
  EXPECT_NE(model_error_of([&] { f.get_string("a.u32"); }).find("a.u32 is not a string"),
            std::string::npos);
  EXPECT_NE(model_error_of([&] { f.get_float("a.u32"); }).find("a.u32 is not a float"),
            std::string::npos);
  // Lenient readers give nullopt for another type, numbers of any kind as double.
  EXPECT_EQ(f.find_int("a.neg"), -3);
  EXPECT_FALSE(f.find_string("a.u32"));
  EXPECT_EQ(f.find_number("a.u32"), 7.0);
  EXPECT_EQ(f.find_bool("a.bool"), true);
  EXPECT_EQ(f.numeric_array("a.ints"), (std::vector<double>{11, 11, 10, 0}));
  EXPECT_TRUE(f.numeric_array("tokenizer.strs").empty());
  EXPECT_EQ(f.find_array_size("tokenizer.strs"), 2u);
  EXPECT_EQ(f.require_int("a.u32"), 7);
  EXPECT_NE(model_error_of([&] { f.require_int("a.f32"); }).find("missing integer key a.f32"),
            std::string::npos);
}

TEST(GgufFile, TensorsCarryTheirByteRange) {
  TempDir dir;
  const auto path = write_sample(dir.path());
  const GgufFile f(path);
  const auto w = f.tensor("w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->type, GGML_TYPE_F32);
  EXPECT_EQ(w->ne, (std::array<std::int64_t, 4>{4, 3, 1, 1}));
  EXPECT_EQ(ne_string(w->ne), "[4, 3]");
  EXPECT_EQ(w->bytes, 48u);
  EXPECT_LE(w->offset + w->bytes, f.file_size());  // ggml pads the data to its alignment
  const std::string bytes = read_bytes(path);
  float first = 0;
  std::memcpy(&first, bytes.data() + w->offset, sizeof first);
  EXPECT_EQ(first, 1.5f);
  EXPECT_EQ(f.tensors().size(), 1u);
  EXPECT_FALSE(f.tensor("nope"));
}

/// Issue 13 finding 5: ggml's gguf_init_from_file loads a header's type fields into enums before it
/// checks them (undefined behaviour for a crafted file). clef checks every type field first
/// (gguf/header_scan.hpp) and refuses the file with a model_error naming it.
TEST(GgufFile, RefusesUnknownTypeFieldsBeforeGgmlReadsThem) {
  TempDir dir;
  const std::string bytes = read_bytes(write_sample(dir.path()));
  const auto patched = [&](std::size_t at, std::uint32_t value, const char* name) {
    std::string b = bytes;
    std::memcpy(b.data() + at, &value, 4);
    const auto path = dir.path() / name;
    std::ofstream(path, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
    return path;
  };
  const std::size_t kv_type = bytes.find("a.u32") + 5;  // key, then its u32 value type
  const std::string w_name("\x01\0\0\0\0\0\0\0w", 9);
  const std::size_t w_type = bytes.rfind(w_name) + 9 + 4 + 2 * 8;  // name, n_dims, ne[2], type
  ASSERT_NE(bytes.find("a.u32"), std::string::npos);
  ASSERT_NE(bytes.rfind(w_name), std::string::npos);
  for (std::uint32_t bad : {13u, 99u, 0xFFFFFFFFu}) {
    const auto path = patched(kv_type, bad, "bad_kv.gguf");
    const std::string what = model_error_of([&] { GgufFile{path}; });
    EXPECT_NE(what.find("unknown value type " + std::to_string(bad)), std::string::npos) << what;
    EXPECT_NE(what.find("bad_kv.gguf"), std::string::npos) << what;
  }
  for (std::uint32_t bad : {static_cast<std::uint32_t>(GGML_TYPE_COUNT), 200u, 0x80000000u}) {
    const auto path = patched(w_type, bad, "bad_tensor.gguf");
    const std::string what = model_error_of([&] { GgufFile(path, /*header_only=*/true); });
    EXPECT_NE(what.find("unknown ggml type " + std::to_string(bad)), std::string::npos) << what;
  }
  // The unpatched file is fine, and its tensor type sits where the test patched it.
  std::uint32_t f32 = 99;
  std::memcpy(&f32, bytes.data() + w_type, 4);
  EXPECT_EQ(f32, static_cast<std::uint32_t>(GGML_TYPE_F32));
  EXPECT_NO_THROW(GgufFile(dir.path() / "sample.gguf"));
}

TEST(GgufFile, RefusesMissingForeignAndTruncatedFiles) {
  TempDir dir;
  EXPECT_NE(model_error_of([&] { GgufFile(dir.path() / "none.gguf"); }).find("no such file"),
            std::string::npos);
  std::ofstream(dir.path() / "junk.gguf") << "not a model";
  EXPECT_NE(model_error_of([&] { GgufFile(dir.path() / "junk.gguf"); }).find("is not a GGUF file"),
            std::string::npos);
  // Data cut off: refused, unless only the header is asked for.
  const std::string bytes = read_bytes(write_sample(dir.path()));
  const auto cut = dir.path() / "cut.gguf";
  std::ofstream(cut, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 24));
  EXPECT_NE(model_error_of([&] { GgufFile{cut}; }).find("lies outside the file"),
            std::string::npos);
  EXPECT_TRUE(GgufFile(cut, /*header_only=*/true).tensor("w"));
}

TEST(CopyKeys, CopiesEveryKeyOfAPrefixWithItsTypeAndValue) {
  TempDir dir;
  const GgufFile f(write_sample(dir.path()));
  const GgufContextPtr dst(gguf_init_empty());
  EXPECT_EQ(copy_keys_with_prefix(dst.get(), f.raw(), "a."), 5u);
  EXPECT_EQ(copy_keys_with_prefix(dst.get(), f.raw(), "tokenizer."), 1u);
  EXPECT_EQ(gguf_get_n_kv(dst.get()), 6);
  const std::int64_t strs = gguf_find_key(dst.get(), "tokenizer.strs");
  ASSERT_GE(strs, 0);
  EXPECT_STREQ(gguf_get_arr_str(dst.get(), strs, 1), "y");
  EXPECT_EQ(gguf_get_val_i32(dst.get(), gguf_find_key(dst.get(), "a.neg")), -3);
  copy_kv(dst.get(), f.raw(), gguf_find_key(f.raw(), "a.u32"), "b.renamed");
  EXPECT_EQ(gguf_get_val_u32(dst.get(), gguf_find_key(dst.get(), "b.renamed")), 7u);
}

}  // namespace
}  // namespace clef::gguf
