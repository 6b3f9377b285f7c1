// clef::info on the generated tiny model (agreeing with libllama's own reading of it), on the
// oracle head files, and refusing what clef cannot use with a clear model_error.
#include "info/model_info.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>

#include "gguf/gguf_file.hpp"
#include "llama.h"
#include "support/gguf_rewrite.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/head_writer.hpp"
#include "util/error.hpp"

namespace clef::info {
namespace {

const std::filesystem::path kOracleHead = std::filesystem::path(CLEF_TEST_DATA) / "oracle" / "head";

/// The model_error message of `f()`, or a test failure when it does not throw one.
template <typename F>
std::string model_error_of(F&& f) {
  try {
    f();
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::model_error) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no clef::Error thrown";
  return {};
}

TEST(ModelInfo, TinyModelDirectoryAgreesWithLibllama) {
  const testmodel::MadeModel& made = test::tiny_model();
  const ModelReport r = inspect_model({made.backbone.parent_path()});
  ASSERT_TRUE(r.backbone && r.mmproj && r.head);
  EXPECT_TRUE(r.warnings.empty());

  test::ensure_llama_backend();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  std::unique_ptr<llama_model, decltype(&llama_model_free)> model(
      llama_model_load_from_file(made.backbone.string().c_str(), mp), &llama_model_free);
  ASSERT_NE(model, nullptr);
  const BackboneInfo& b = *r.backbone;
  EXPECT_EQ(b.arch, "qwen35");
  EXPECT_EQ(b.n_embd, static_cast<std::uint32_t>(llama_model_n_embd(model.get())));
  EXPECT_EQ(b.n_layer, static_cast<std::uint32_t>(llama_model_n_layer(model.get())));
  EXPECT_EQ(b.n_head, static_cast<std::uint32_t>(llama_model_n_head(model.get())));
  EXPECT_EQ(b.n_head_kv, static_cast<std::uint32_t>(llama_model_n_head_kv(model.get())));
  EXPECT_EQ(b.n_ctx_train, static_cast<std::uint32_t>(llama_model_n_ctx_train(model.get())));
  EXPECT_EQ(b.n_vocab,
            static_cast<std::uint32_t>(llama_vocab_n_tokens(llama_model_get_vocab(model.get()))));
  EXPECT_EQ(b.file_size, std::filesystem::file_size(made.backbone));

  // Layer pattern: every 4th layer is full attention.
  const std::vector<bool> expect = {true, true, true, false, true, true, true, false};
  EXPECT_EQ(b.recurrent, expect);
  const auto& s = made.preset.backbone;
  EXPECT_EQ(b.rope_sections, (std::array<std::int32_t, 4>{s.rope_sections[0], s.rope_sections[1],
                                                          s.rope_sections[2], s.rope_sections[3]}));
  EXPECT_EQ(b.output_type, s.vocab_type);
  std::size_t counted = 0;
  for (const auto& [type, n] : b.tensor_types) counted += n;
  EXPECT_EQ(counted, b.n_tensors);
  // 3 global + 6 DeltaNet layers x 14 + 2 attention layers x 11 tensors.
  EXPECT_EQ(b.n_tensors, 3u + 6 * 14 + 2 * 11);

  const MmprojInfo& m = *r.mmproj;
  EXPECT_EQ(m.vision.projector_type, "qwen3vl_merger");
  EXPECT_EQ(m.vision.processor.patch_size, 16);
  EXPECT_EQ(m.vision.processor.merge_size, 2);
  EXPECT_EQ(m.output_dim, b.n_embd);
  EXPECT_EQ(m.n_deepstack, 0u);
  EXPECT_EQ(m.vision.image_mean, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(m.vision.image_std, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_FALSE(m.vision.file_min_pixels.has_value());

  const HeadInfo& h = *r.head;
  EXPECT_EQ(h.config.hidden_size, b.n_embd);
  EXPECT_EQ(h.dtypes, (std::set<std::string>{"BF16"}));
  EXPECT_EQ(h.n_tensors, 54u);    // oracle README: tiny head, 54 tensors
  EXPECT_EQ(h.n_params, 38308u);  // oracle README: tiny head, 38,308 parameters

  const std::string text = format_report(r);
  for (const char* needle :
       {"qwen35", "G G G A G G G A", "[3, 3, 2, 0]", "qwen3vl_merger", "BF16", "untied"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
}

TEST(ModelInfo, ExplicitFilesAreClassified) {
  const testmodel::MadeModel& made = test::tiny_model();
  const ModelFiles f = classify_model_files({made.head, made.mmproj, made.backbone});
  EXPECT_EQ(f.backbone, made.backbone);
  EXPECT_EQ(f.mmproj, made.mmproj);
  EXPECT_EQ(f.head, made.head);
  EXPECT_EQ(f.head_config, made.head_config);
  const ModelReport only_backbone = inspect_model({made.backbone});
  EXPECT_TRUE(only_backbone.backbone && !only_backbone.head && !only_backbone.mmproj);
  EXPECT_EQ(only_backbone.warnings.size(), 2u);  // no mmproj, no head
}

class OracleHeadFiles
    : public ::testing::TestWithParam<std::tuple<std::string, std::size_t, std::uint64_t>> {};

TEST_P(OracleHeadFiles, AreAcceptedWithTheReadmeCounts) {
  const auto& [name, n_tensors, n_params] = GetParam();
  for (const char* file : {"joint_head_f32.safetensors", "joint_head_bf16.safetensors"}) {
    const HeadInfo h =
        read_head_info(kOracleHead / name / file, kOracleHead / name / "joint_head_config.json");
    EXPECT_EQ(h.n_tensors, n_tensors);
    EXPECT_EQ(h.n_params, n_params);
  }
}

INSTANTIATE_TEST_SUITE_P(Readme, OracleHeadFiles,
                         ::testing::Values(std::make_tuple("tiny", 54u, 38308u),
                                           std::make_tuple("small", 122u, 1719428u)));

// ---- refusals ----

TEST(ModelInfoRefuses, TiedOutputWeight) {
  test::TempDir tmp;
  const auto path = tmp.path() / "tied.gguf";
  test::rewrite_gguf(test::tiny_model().backbone, path, [](gguf_context*) {}, {"output.weight"});
  const std::string msg = model_error_of([&] { read_backbone_info(gguf::GgufFile(path)); });
  EXPECT_NE(msg.find("no output.weight (tied embeddings)"), std::string::npos) << msg;
}

TEST(ModelInfoRefuses, WrongArchitecture) {
  test::TempDir tmp;
  const auto path = tmp.path() / "llama.gguf";
  test::rewrite_gguf(test::tiny_model().backbone, path,
                     [](gguf_context* g) { gguf_set_val_str(g, "general.architecture", "llama"); });
  const std::string msg = model_error_of([&] { inspect_model({path}); });
  EXPECT_NE(msg.find("architecture 'llama' is not supported"), std::string::npos) << msg;
}

TEST(ModelInfoRefuses, NonQwen3vlProjector) {
  test::TempDir tmp;
  const auto path = tmp.path() / "mmproj-mlp.gguf";
  test::rewrite_gguf(test::tiny_model().mmproj, path,
                     [](gguf_context* g) { gguf_set_val_str(g, "clip.projector_type", "mlp"); });
  const std::string msg = model_error_of([&] { inspect_model({path}); });
  EXPECT_NE(msg.find("projector type 'mlp' is not supported"), std::string::npos) << msg;
}

TEST(ModelInfoRefuses, HeadWithWrongHiddenSize) {
  const testmodel::MadeModel& made = test::tiny_model();
  test::TempDir tmp;
  std::filesystem::copy_file(made.backbone, tmp.path() / "backbone.gguf");
  head::HeadConfig c = made.preset.head;
  c.hidden_size = 32;
  testmodel::write_head(tmp.path(), c, 3);
  const std::string msg = model_error_of([&] { inspect_model({tmp.path()}); });
  EXPECT_NE(msg.find("head hidden_size 32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("n_embd 64"), std::string::npos) << msg;
}

TEST(ModelInfoRefuses, HeadThatDoesNotMatchItsConfig) {
  const testmodel::MadeModel& made = test::tiny_model();
  test::TempDir tmp;
  // Head written for 2 decoder layers, config claiming 1: layers.1.* are unexpected.
  head::HeadConfig two = made.preset.head;
  two.layers = 2;
  testmodel::random_head(two, 1).write(tmp.path() / "joint_head.safetensors",
                                       head::SafetensorsDtype::bf16);
  std::filesystem::copy_file(made.head_config, tmp.path() / "joint_head_config.json");
  std::string msg = model_error_of([&] {
    read_head_info(tmp.path() / "joint_head.safetensors", tmp.path() / "joint_head_config.json");
  });
  EXPECT_NE(msg.find("unexpected head parameters"), std::string::npos) << msg;
  EXPECT_NE(msg.find("layers.1."), std::string::npos) << msg;
  // And the other way round: names missing.
  testmodel::write_head(tmp.path(), made.preset.head, 1);
  std::ofstream(tmp.path() / "joint_head_config.json") << head::head_config_json(two);
  msg = model_error_of([&] {
    read_head_info(tmp.path() / "joint_head.safetensors", tmp.path() / "joint_head_config.json");
  });
  EXPECT_NE(msg.find("missing head parameters"), std::string::npos) << msg;
}

TEST(ModelInfoRefuses, HeadConfigWithoutDecoderLayers) {
  // head::read_head_config allows 0 layers; `clef info` refuses them, as it always has.
  const testmodel::MadeModel& made = test::tiny_model();
  test::TempDir tmp;
  testmodel::write_head(tmp.path(), made.preset.head, 1);
  head::HeadConfig none = made.preset.head;
  none.layers = 0;
  std::ofstream(tmp.path() / "joint_head_config.json") << head::head_config_json(none);
  const std::string msg = model_error_of([&] {
    read_head_info(tmp.path() / "joint_head.safetensors", tmp.path() / "joint_head_config.json");
  });
  EXPECT_NE(msg.find("layers must be a positive integer"), std::string::npos) << msg;
}

TEST(ModelInfoRefuses, NotAGgufAndMissingFiles) {
  test::TempDir tmp;
  const auto junk = tmp.path() / "model.gguf";
  std::ofstream(junk) << "this is not a model";
  std::string msg = model_error_of([&] { inspect_model({junk}); });
  EXPECT_NE(msg.find("is not a GGUF file"), std::string::npos) << msg;

  msg = model_error_of([&] { inspect_model({tmp.path() / "nothing-here.gguf"}); });
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;

  // A directory with a backbone but no head.
  std::filesystem::remove(junk);
  std::filesystem::copy_file(test::tiny_model().backbone, tmp.path() / "backbone.gguf");
  msg = model_error_of([&] { inspect_model({tmp.path()}); });
  EXPECT_NE(msg.find("missing joint_head.safetensors"), std::string::npos) << msg;

  const auto bad_head = tmp.path() / "x.safetensors";
  std::ofstream(bad_head) << "garbage!garbage!";
  // Read with head::SafetensorsFile, which refuses it (tests/head/safetensors_test.cpp has the
  // rest).
  msg = model_error_of([&] { read_head_info(bad_head, test::tiny_model().head_config); });
  EXPECT_NE(msg.find(bad_head.string() + ": safetensors header"), std::string::npos) << msg;
}

}  // namespace
}  // namespace clef::info
