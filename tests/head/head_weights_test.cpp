// Loading the head's weights and config: exact f32/BF16 values, the strict set of names,
// shapes checked against the config, the backbone's hidden size, and clear refusals.

#include "head/head_weights.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>

#include "head/head_config.hpp"
#include "head/head_parameters.hpp"
#include "head/safetensors.hpp"
#include "raw_safetensors.hpp"
#include "util/error.hpp"

namespace clef::head {
namespace {

namespace fs = std::filesystem;
using testing::WriteTensor;

const fs::path kHead = fs::path(CLEF_TEST_DATA) / "oracle" / "head";
const fs::path kTiny = kHead / "tiny";

HeadWeights load_tiny(const fs::path& weights, std::optional<std::int64_t> n_embd = std::nullopt) {
  return HeadWeights::load(weights, kTiny / "joint_head_config.json", n_embd);
}

/// Expects `f` to throw a model_error whose message contains every needle.
template <typename F>
void expect_model_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::model_error);
    for (const auto& n : needles) {
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what() << " lacks " << n;
    }
  }
}

TEST(HeadParameters, CountsMatchTheReadme) {
  EXPECT_EQ(head_parameter_specs(read_head_config(kTiny / "joint_head_config.json")).size(), 54u);
  EXPECT_EQ(
      head_parameter_specs(read_head_config(kHead / "small" / "joint_head_config.json")).size(),
      122u);
}

TEST(HeadConfig, ReadsTheOracleConfigs) {
  const HeadConfig c = read_head_config(kHead / "small" / "joint_head_config.json");
  EXPECT_EQ(c.hidden_size, 256);
  EXPECT_EQ(c.width, 128);
  EXPECT_EQ(c.routing_layers, 2);
  EXPECT_EQ(c.layers, 4);
  EXPECT_EQ(c.heads, 8);
  EXPECT_EQ(c.feedforward, 512);
}

TEST(HeadConfig, RefusesBadConfigs) {
  const std::string ok_rest = "\"routing_layers\":1,\"layers\":1,\"heads\":4,\"feedforward\":64";
  expect_model_error([] { parse_head_config("{", "c.json"); }, {"c.json", "not valid JSON"});
  expect_model_error([] { parse_head_config("[]", "c.json"); }, {"not a JSON object"});
  // Issue 13 finding 5: deep nesting overflowed RapidJSON's recursive parser (a segfault).
  expect_model_error([] { parse_head_config(std::string(500000, '['), "c.json"); },
                     {"c.json", "not valid JSON"});
  expect_model_error(
      [] {
        parse_head_config("{\"x\":" + std::string(500000, '[') + std::string(500000, ']') + "}",
                          "c.json");
      },
      {"c.json", "hidden_size"});
  expect_model_error([&] { parse_head_config("{\"width\":32," + ok_rest + "}", "c.json"); },
                     {"missing \"hidden_size\""});
  expect_model_error(
      [&] { parse_head_config("{\"hidden_size\":64,\"width\":30," + ok_rest + "}", "c.json"); },
      {"divisible"});
  expect_model_error(
      [&] { parse_head_config("{\"hidden_size\":-1,\"width\":32," + ok_rest + "}", "c.json"); },
      {"\"hidden_size\" must be an integer"});
  expect_model_error(
      [&] { parse_head_config("{\"hidden_size\":64.5,\"width\":32," + ok_rest + "}", "c.json"); },
      {"\"hidden_size\" must be an integer"});
  const HeadConfig c = parse_head_config(
      "{\"hidden_size\":64,\"width\":32,\"dropout\":0.1," + ok_rest + "}", "c.json");
  EXPECT_EQ(c.feedforward, 64);
}

TEST(HeadWeights, LoadsF32AndBf16Exactly) {
  const HeadWeights w32 = load_tiny(kTiny / "joint_head_f32.safetensors", 64);
  const HeadWeights w16 = load_tiny(kTiny / "joint_head_bf16.safetensors");
  EXPECT_EQ(w32.tensors().size(), 54u);
  EXPECT_EQ(w32.config().width, 32);
  const SafetensorsFile raw32(kTiny / "joint_head_f32.safetensors");
  const SafetensorsFile raw16(kTiny / "joint_head_bf16.safetensors");
  for (const auto& [name, t] : w32.tensors()) {
    EXPECT_EQ(t.values, raw32.to_f32(*raw32.find(name))) << name;
    const auto bytes = raw16.raw(*raw16.find(name));
    const HeadTensor& t16 = w16.at(name);
    ASSERT_EQ(t16.values.size() * 2, bytes.size()) << name;
    for (std::size_t i = 0; i < t16.values.size(); ++i) {
      std::uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      EXPECT_EQ(std::bit_cast<std::uint32_t>(t16.values[i]), std::uint32_t{b} << 16) << name;
    }
  }
  EXPECT_TRUE(w32.at("prior_logit_scale").shape.empty());
  EXPECT_EQ(w32.at("type_embedding.weight").shape, (std::vector<std::int64_t>{3, 32}));
  EXPECT_THROW((void)w32.at("nope"), Error);
}

TEST(HeadWeights, LoadDirUsesTheReleaseFileNames) {
  const auto dir = testing::scratch_dir("load_dir");
  expect_model_error([&] { HeadWeights::load_dir(dir); }, {"not found", "joint_head_config.json"});
  fs::copy_file(kTiny / "joint_head_config.json", dir / "joint_head_config.json");
  expect_model_error([&] { HeadWeights::load_dir(dir); }, {"not found", "joint_head.safetensors"});
  fs::copy_file(kTiny / "joint_head_bf16.safetensors", dir / "joint_head.safetensors");
  EXPECT_EQ(HeadWeights::load_dir(dir, 64).tensors().size(), 54u);
}

TEST(HeadWeights, RefusesHiddenSizeMismatch) {
  expect_model_error([] { load_tiny(kTiny / "joint_head_f32.safetensors", 2048); },
                     {"hidden_size 64", "n_embd) 2048"});
}

TEST(HeadWeights, RefusesTruncatedWeights) {
  const auto dir = testing::scratch_dir("weights_truncated");
  fs::copy_file(kTiny / "joint_head_f32.safetensors", dir / "w.safetensors");
  fs::resize_file(dir / "w.safetensors", fs::file_size(dir / "w.safetensors") - 100);
  expect_model_error([&] { load_tiny(dir / "w.safetensors"); }, {"truncated"});
}

TEST(HeadWeights, RefusesMissingAndExtraNames) {
  const auto dir = testing::scratch_dir("names");
  auto tensors = testing::read_all(kTiny / "joint_head_f32.safetensors");

  auto missing = tensors;
  std::erase_if(missing, [](const WriteTensor& t) { return t.name == "residual_gate"; });
  testing::write_safetensors(dir / "missing.safetensors", missing);
  expect_model_error([&] { load_tiny(dir / "missing.safetensors"); },
                     {"missing \"residual_gate\""});

  auto extra = tensors;
  extra.push_back(
      {"layers.1.norm1.weight", "F32", {32}, testing::f32_bytes(std::vector<float>(32))});
  testing::write_safetensors(dir / "extra.safetensors", extra);
  expect_model_error([&] { load_tiny(dir / "extra.safetensors"); },
                     {"unexpected \"layers.1.norm1.weight\""});

  // A config with more decoder layers than the file holds: all of layers.1.* is missing.
  std::ofstream(dir / "two_layers.json")
      << "{\"hidden_size\":64,\"width\":32,\"routing_layers\":1,\"layers\":2,\"heads\":4,"
         "\"feedforward\":64}";
  expect_model_error(
      [&] { HeadWeights::load(kTiny / "joint_head_f32.safetensors", dir / "two_layers.json"); },
      {"missing \"layers.1.", "and 13 more"});
}

TEST(HeadWeights, RefusesWrongShape) {
  const auto dir = testing::scratch_dir("shape");
  auto tensors = testing::read_all(kTiny / "joint_head_f32.safetensors");
  for (auto& t : tensors) {
    if (t.name == "memory_projection.weight") t.shape = {64, 32};  // transposed
  }
  testing::write_safetensors(dir / "w.safetensors", tensors);
  expect_model_error([&] { load_tiny(dir / "w.safetensors"); },
                     {"\"memory_projection.weight\"", "[64, 32]", "[32, 64]"});

  tensors = testing::read_all(kTiny / "joint_head_f32.safetensors");
  for (auto& t : tensors) {
    if (t.name == "prior_logit_scale") t.shape = {1};  // a [1] tensor is not the 0-dim scalar
  }
  testing::write_safetensors(dir / "s.safetensors", tensors);
  expect_model_error([&] { load_tiny(dir / "s.safetensors"); }, {"\"prior_logit_scale\"", "[1]"});
}

TEST(HeadWeights, RefusesUnsupportedDtype) {
  const auto dir = testing::scratch_dir("dtype");
  auto tensors = testing::read_all(kTiny / "joint_head_f32.safetensors");
  for (auto& t : tensors) {
    if (t.name == "residual_gate") t.dtype = "I32";
  }
  testing::write_safetensors(dir / "w.safetensors", tensors);
  expect_model_error([&] { load_tiny(dir / "w.safetensors"); }, {"residual_gate", "I32"});
}

}  // namespace
}  // namespace clef::head
