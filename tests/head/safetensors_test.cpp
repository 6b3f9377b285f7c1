// The safetensors reader: exact widening, the oracle files, and refusal of every kind of
// corrupt or truncated file with a clef::Error (model_error), never a crash.

#include "head/safetensors.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "raw_safetensors.hpp"
#include "util/error.hpp"

namespace clef::head {
namespace {

namespace fs = std::filesystem;
using testing::WriteTensor;

const fs::path kTiny = fs::path(CLEF_TEST_DATA) / "oracle" / "head" / "tiny";

/// binary16 value from its fields, computed in double (independent of the bit manipulation).
double f16_reference(std::uint16_t bits) {
  const int sign = bits >> 15;
  const int exp = (bits >> 10) & 0x1F;
  const int mant = bits & 0x3FF;
  double v;
  if (exp == 0x1F) {
    v = mant == 0 ? INFINITY : NAN;
  } else if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return sign ? -v : v;
}

TEST(Widen, F16ExactForEveryBitPattern) {
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float got = f16_to_f32(bits);
    const double want = f16_reference(bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << b;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << std::hex << b;
      EXPECT_EQ(std::signbit(got), (b & 0x8000) != 0) << std::hex << b;
    }
  }
}

TEST(Widen, Bf16IsTheHighHalfOfF32) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC049), -3.140625f);
  for (std::uint32_t b = 0; b <= 0xFFFF; b += 7) {
    const float got = bf16_to_f32(static_cast<std::uint16_t>(b));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got), b << 16);
  }
}

TEST(Safetensors, ReadsTheOracleFile) {
  const SafetensorsFile f(kTiny / "joint_head_f32.safetensors");
  EXPECT_EQ(f.tensors().size(), 54u);
  const TensorInfo* s = f.find("prior_logit_scale");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(f.to_f32(*s).size(), 1u);
  const TensorInfo* w = f.find("evidence_layers.0.attention.in_proj_weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<std::int64_t>{96, 32}));
  EXPECT_EQ(w->dtype, DType::F32);
  EXPECT_EQ(f.find("no.such.tensor"), nullptr);
  bool has_format = false;
  for (const auto& [k, v] : f.metadata()) has_format |= (k == "format" && v == "pt");
  EXPECT_TRUE(has_format);
}

// README: bf16 = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 (RNE); widening back is exact.
TEST(Safetensors, Bf16FileIsTheF32FileRoundedToNearestEven) {
  const SafetensorsFile f32(kTiny / "joint_head_f32.safetensors");
  const SafetensorsFile b16(kTiny / "joint_head_bf16.safetensors");
  ASSERT_EQ(f32.tensors().size(), b16.tensors().size());
  for (const auto& t : f32.tensors()) {
    const TensorInfo* u = b16.find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->dtype, DType::BF16);
    const auto a = f32.to_f32(t);
    const auto b = b16.to_f32(*u);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::uint64_t bits = std::bit_cast<std::uint32_t>(a[i]);
      const auto rounded = static_cast<std::uint32_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
      EXPECT_EQ(std::bit_cast<std::uint32_t>(b[i]), rounded << 16) << t.name << "[" << i << "]";
    }
  }
}

TEST(Safetensors, ReadsF16) {
  const auto dir = testing::scratch_dir("reads_f16");
  const std::vector<std::uint16_t> half = {0x3C00, 0xC000, 0x0001, 0x7BFF};
  std::vector<std::byte> bytes(half.size() * 2);
  std::memcpy(bytes.data(), half.data(), bytes.size());
  testing::write_safetensors(dir / "h.safetensors", {{"x", "F16", {2, 2}, bytes}});
  const SafetensorsFile f(dir / "h.safetensors");
  EXPECT_EQ(f.to_f32(*f.find("x")),
            (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f}));
}

/// Expects opening `path` to fail with a model_error whose message contains `needle`.
void expect_refused(const fs::path& path, const std::string& needle) {
  try {
    const SafetensorsFile f(path);
    ADD_FAILURE() << "accepted " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::model_error);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

std::vector<std::byte> zeros(std::size_t n) {
  return std::vector<std::byte>(n);
}

TEST(SafetensorsRefuses, MissingFile) {
  expect_refused(testing::scratch_dir("missing") / "nope.safetensors", "cannot open");
}

TEST(SafetensorsRefuses, TooShortForTheLength) {
  const auto dir = testing::scratch_dir("short");
  std::ofstream(dir / "empty.safetensors", std::ios::binary).close();
  expect_refused(dir / "empty.safetensors", "truncated");
  std::ofstream(dir / "seven.safetensors", std::ios::binary) << "1234567";
  expect_refused(dir / "seven.safetensors", "truncated");
}

TEST(SafetensorsRefuses, TruncatedOracleFile) {
  const auto dir = testing::scratch_dir("truncated");
  const fs::path src = kTiny / "joint_head_f32.safetensors";
  const auto size = fs::file_size(src);
  for (std::uintmax_t keep : {std::uintmax_t{8}, std::uintmax_t{100}, size / 2, size - 1}) {
    const fs::path p = dir / ("cut" + std::to_string(keep) + ".safetensors");
    fs::copy_file(src, p, fs::copy_options::overwrite_existing);
    fs::resize_file(p, keep);
    expect_refused(p, "");
  }
  fs::copy_file(src, dir / "cut.safetensors", fs::copy_options::overwrite_existing);
  fs::resize_file(dir / "cut.safetensors", size - 4);
  expect_refused(dir / "cut.safetensors", "truncated");
}

TEST(SafetensorsRefuses, HugeHeaderLength) {
  const auto dir = testing::scratch_dir("huge");
  std::ofstream out(dir / "h.safetensors", std::ios::binary);
  const std::uint64_t n = ~std::uint64_t{0};
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << "{}";
  out.close();
  expect_refused(dir / "h.safetensors", "limit");
}

TEST(SafetensorsRefuses, BadHeaders) {
  const auto dir = testing::scratch_dir("bad_headers");
  struct Case {
    std::string header;
    std::size_t data;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"", 0, "not a JSON object"},
      {"[1,2]", 0, "not a JSON object"},
      {"{\"a\":", 0, "not valid JSON"},
      {"{} trailing", 0, "not valid JSON"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
       4, "twice"},
      {"{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype"},
      {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"},
      {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "shape"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "data_offsets"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "shape entry"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "shape entry"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "need 8"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "outside"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 4, "outside"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
       "\"data_offsets\":[0,4]}}",
       4, "overflows"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "gap or overlap"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
       8, "gap or overlap"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "cover 4 bytes"},
      {"{\"__metadata__\":{\"k\":1}}", 0, "not a string"},
      // Issue 13 finding 5: nesting that overflowed RapidJSON's recursive parser (a segfault).
      {"{\"a\":" + std::string(200000, '[') + std::string(200000, ']') + "}", 0, "not an object"},
      {"{\"a\":" + std::string(200000, '['), 0, "not valid JSON"},
      {"{\"__metadata__\":[]}", 0, "not an object"},
      {"{\"a\":[]}", 0, "not an object"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const fs::path p = dir / ("case" + std::to_string(i) + ".safetensors");
    testing::write_raw_safetensors(p, cases[i].header, zeros(cases[i].data));
    SCOPED_TRACE(cases[i].header);
    expect_refused(p, cases[i].needle);
  }
}

/// Issue 13 finding 5: numel() of [2, 2^62, 0] multiplied out in order overflowed int64 (undefined
/// behaviour); the product is 0.
TEST(Safetensors, NumelOfAnEmptyShapeWithHugeDimsIsZero) {
  TensorInfo t;
  t.shape = {2, std::int64_t{1} << 62, 0};
  EXPECT_EQ(t.numel(), 0);
  t.shape = {2, std::int64_t{1} << 62, 3};
  EXPECT_EQ(t.numel(), std::numeric_limits<std::int64_t>::max());
  t.shape = {};
  EXPECT_EQ(t.numel(), 1);
}

TEST(Safetensors, AcceptsPaddingScalarsAndEmptyTensors) {
  const auto dir = testing::scratch_dir("accepts");
  testing::write_raw_safetensors(
      dir / "ok.safetensors",
      "{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
      "\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]},"
      "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[4,12],\"extra\":true}}     ",
      zeros(12));
  const SafetensorsFile f(dir / "ok.safetensors");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.to_f32(*f.find("s")), std::vector<float>{0.0f});
  EXPECT_TRUE(f.to_f32(*f.find("e")).empty());
  try {
    (void)f.to_f32(*f.find("i"));
    ADD_FAILURE() << "I64 widened to f32";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::model_error);
    EXPECT_NE(std::string(e.what()).find("I64"), std::string::npos);
  }
}

}  // namespace
}  // namespace clef::head
