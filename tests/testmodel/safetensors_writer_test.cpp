// The safetensors writer and the head parameter specs it writes against the oracle head files
// (tests/data/oracle/head/{tiny,small}): same names, shapes, header and bytes.
#include "head/safetensors_writer.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstring>
#include <map>

#include "head/bf16.hpp"
#include "head/head_parameters.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/head_roles.hpp"
#include "testmodel/head_writer.hpp"

namespace clef::testmodel {
namespace {

using head::bf16_to_float;
using head::float_to_bf16;
using head::SafetensorsDtype;
using head::SafetensorsWriter;

const std::filesystem::path kOracle = std::filesystem::path(CLEF_TEST_DATA) / "oracle" / "head";

struct OracleFile {
  std::vector<std::pair<std::string, std::string>> metadata;  // file order
  struct Tensor {
    std::vector<std::int64_t> shape;
    std::vector<float> values;
  };
  std::map<std::string, Tensor> tensors;
};

/// Independent minimal reader of an F32 oracle file (RapidJSON keeps the header's key order).
OracleFile read_f32_oracle(const std::filesystem::path& p) {
  const std::string bytes = test::read_bytes(p);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  rapidjson::Document doc;
  doc.Parse(bytes.data() + 8, n);
  EXPECT_FALSE(doc.HasParseError());
  OracleFile out;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string name = it->name.GetString();
    if (name == "__metadata__") {
      for (auto m = it->value.MemberBegin(); m != it->value.MemberEnd(); ++m) {
        out.metadata.emplace_back(m->name.GetString(), m->value.GetString());
      }
      continue;
    }
    EXPECT_STREQ(it->value["dtype"].GetString(), "F32");
    OracleFile::Tensor t;
    for (const auto& d : it->value["shape"].GetArray()) t.shape.push_back(d.GetInt64());
    const std::uint64_t b = it->value["data_offsets"][0].GetUint64();
    const std::uint64_t e = it->value["data_offsets"][1].GetUint64();
    t.values.resize((e - b) / 4);
    std::memcpy(t.values.data(), bytes.data() + 8 + n + b, e - b);
    out.tensors.emplace(name, std::move(t));
  }
  return out;
}

SafetensorsWriter writer_from(const OracleFile& f) {
  SafetensorsWriter w;
  for (const auto& [k, v] : f.metadata) w.set_metadata(k, v);
  for (const auto& [name, t] : f.tensors) w.add(name, t.shape, t.values);
  return w;
}

class OracleHead : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleHead, WriterReproducesF32AndBf16FilesByteForByte) {
  const std::filesystem::path dir = kOracle / GetParam();
  const OracleFile f32 = read_f32_oracle(dir / "joint_head_f32.safetensors");
  const SafetensorsWriter w = writer_from(f32);
  EXPECT_TRUE(w.serialize(SafetensorsDtype::f32) ==
              test::read_bytes(dir / "joint_head_f32.safetensors"));
  // The oracle's BF16 file was rounded by torch; our RNE must give the same bits, and the same
  // header (dtype BF16, halved offsets).
  const std::string bf16_oracle = test::read_bytes(dir / "joint_head_bf16.safetensors");
  // Take the BF16 file's own metadata (in its order), in case it differs from the F32 file's.
  const OracleFile meta_only = [&] {
    std::uint64_t n = 0;
    std::memcpy(&n, bf16_oracle.data(), 8);
    rapidjson::Document doc;
    doc.Parse(bf16_oracle.data() + 8, n);
    OracleFile m;
    for (auto it = doc["__metadata__"].MemberBegin(); it != doc["__metadata__"].MemberEnd(); ++it) {
      m.metadata.emplace_back(it->name.GetString(), it->value.GetString());
    }
    return m;
  }();
  SafetensorsWriter w16 = writer_from(f32);
  for (const auto& [k, v] : meta_only.metadata) w16.set_metadata(k, v);
  const std::string ours = w16.serialize(SafetensorsDtype::bf16);
  EXPECT_EQ(ours.size(), bf16_oracle.size());
  EXPECT_TRUE(ours == bf16_oracle);
}

TEST_P(OracleHead, HeadParameterSpecsMatchOracleNamesAndShapes) {
  const std::filesystem::path dir = kOracle / GetParam();
  const OracleFile f32 = read_f32_oracle(dir / "joint_head_f32.safetensors");
  const std::string cfg = test::read_bytes(dir / "joint_head_config.json");
  rapidjson::Document doc;
  doc.Parse(cfg.c_str());
  const head::HeadConfig c{doc["hidden_size"].GetInt64(),    doc["width"].GetInt64(),
                           doc["routing_layers"].GetInt64(), doc["layers"].GetInt64(),
                           doc["heads"].GetInt64(),          doc["feedforward"].GetInt64()};
  // The writer takes names and shapes from head::head_parameter_specs.
  const std::vector<head::ParamSpec> params = head::head_parameter_specs(c);
  ASSERT_EQ(params.size(), f32.tensors.size());
  for (const head::ParamSpec& p : params) {
    const auto it = f32.tensors.find(p.name);
    ASSERT_NE(it, f32.tensors.end()) << p.name;
    EXPECT_EQ(it->second.shape, p.shape) << p.name;
  }
  // The config file we write is byte-identical to the reference's json.dump(indent=2).
  EXPECT_EQ(head::head_config_json(c), cfg);
}

TEST_P(OracleHead, InitialisationRolesFollowTheShapes) {
  const head::HeadConfig c =
      head::read_head_config(kOracle / GetParam() / "joint_head_config.json");
  std::size_t scalars = 0;
  for (const head::ParamSpec& p : head::head_parameter_specs(c)) {
    SCOPED_TRACE(p.name);
    switch (head_param_role(p.name)) {
      case HeadParamRole::scalar:
        EXPECT_TRUE(p.shape.empty());
        ++scalars;
        break;
      case HeadParamRole::norm_weight:
        EXPECT_EQ(p.shape.size(), 1u);
        EXPECT_TRUE(p.name.ends_with(".weight"));
        break;
      case HeadParamRole::bias:
        EXPECT_EQ(p.shape.size(), 1u);
        break;
      case HeadParamRole::type_embedding:
        EXPECT_EQ(p.shape, (std::vector<std::int64_t>{3, c.width}));
        break;
      case HeadParamRole::matrix:
        EXPECT_EQ(p.shape.size(), 2u);
        break;
    }
  }
  EXPECT_EQ(scalars, 3u);
}

INSTANTIATE_TEST_SUITE_P(Configs, OracleHead, ::testing::Values("tiny", "small"));

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  // Exactly halfway between 0x3F80 and 0x3F81: ties to the even 0x3F80.
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);
  // Halfway between 0x3F81 and 0x3F82: ties to the even 0x3F82.
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
}

TEST(SafetensorsWriter, RejectsBadInput) {
  SafetensorsWriter w;
  w.add("a", {2}, {1.0f, 2.0f});
  EXPECT_THROW(w.add("a", {1}, {1.0f}), std::invalid_argument);
  EXPECT_THROW(w.add("b", {3}, {1.0f}), std::invalid_argument);
}

TEST(SafetensorsWriter, HeaderIsPaddedToEightBytes) {
  SafetensorsWriter w;
  w.add("x", {}, {0.5f});
  const std::string bytes = w.serialize(SafetensorsDtype::bf16);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 2);
  EXPECT_EQ(bytes.substr(8, 26), R"({"x":{"dtype":"BF16","shap)");
}

}  // namespace
}  // namespace clef::testmodel
