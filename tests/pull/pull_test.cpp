// clef pull against a fake hub on loopback: fresh download in layouts A and B, resume after a cut
// connection and after an interrupted run, corruption caught by sha256, and refusals (a head-less
// qwen35 GGUF, an unknown repository) before any large download.

#include "pull/pull.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "artifact/layouts_fixture.hpp"
#include "fake_hub.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/header_scan.hpp"
#include "pull/hub_files.hpp"
#include "util/error.hpp"

namespace clef::pull {
namespace {

namespace fs = std::filesystem;
using test::FakeHub;

std::string bytes_of(const fs::path& p) {
  return test::read_bytes(p);
}

template <typename F>
std::string refusal(F&& f, ErrorKind kind = ErrorKind::model_error) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no refusal";
  return "";
}

#define EXPECT_HAS(text, needle) \
  EXPECT_NE(std::string(text).find(needle), std::string::npos) << (text)

PullResult run_pull(const FakeHub& hub, const std::string& ref, const fs::path& dir,
                    std::string* log = nullptr) {
  PullOptions o;
  o.reference = ref;
  o.dir = dir;
  o.endpoint = hub.endpoint();
  std::ostringstream progress;
  PullResult r = pull_model(o, progress);
  if (log) *log = progress.str();
  return r;
}

/// Every Range header asking for bytes from `offset` on ("bytes=N-").
std::size_t resumes_from(const std::vector<std::string>& ranges, std::size_t offset) {
  return static_cast<std::size_t>(
      std::count(ranges.begin(), ranges.end(), "bytes=" + std::to_string(offset) + "-"));
}

TEST(HubFiles, QuantTokensAndReferences) {
  EXPECT_TRUE(name_has_quant("Clef-Flash-Q4_K_M.gguf", "q4_k_m"));
  EXPECT_FALSE(name_has_quant("Clef-Flash-Q4_K_M_L.gguf", "Q4_K_M"));
  EXPECT_FALSE(name_has_quant("Clef-Flash-XQ8_0.gguf", "Q8_0"));
  EXPECT_TRUE(name_has_quant("mmproj-bf16.gguf", "BF16"));
  const auto r = parse_model_reference("ggml-org/Clef-Flash-GGUF:Q4_K_M");
  EXPECT_EQ(r.repo, "ggml-org/Clef-Flash-GGUF");
  EXPECT_EQ(r.quant, "Q4_K_M");
  EXPECT_EQ(parse_model_reference("a/b").quant, "");
  refusal([] { parse_model_reference("no-slash"); }, ErrorKind::invalid_request);
  refusal([] { parse_model_reference("a/b:"); }, ErrorKind::invalid_request);
}

TEST(HubFiles, SelectsModelMmprojAndHead) {
  const std::vector<HubFile> files = {
      {"X-Q4_K_M.gguf", 10, "a", ""},         {"X-Q8_0.gguf", 10, "b", ""},
      {"X-imatrix.gguf", 1, "c", ""},         {"mmproj-X-f16.gguf", 1, "d", ""},
      {"mmproj-X-bf16.gguf", 1, "e", ""},     {"sub/joint_head.safetensors", 1, "f", ""},
      {"joint_head.safetensors", 1, "g", ""}, {"joint_head_config.json", 1, {}, "h"}};
  const Selection def = select_files(files, "");
  EXPECT_EQ(def.model.path, "X-Q4_K_M.gguf");
  EXPECT_EQ(def.mmproj->path, "mmproj-X-bf16.gguf");
  EXPECT_EQ(def.head->path, "joint_head.safetensors");
  EXPECT_EQ(select_files(files, "q8_0").model.path, "X-Q8_0.gguf");
  EXPECT_HAS(refusal([&] { select_files(files, "Q2_K"); }), "X-Q8_0.gguf");
  EXPECT_HAS(refusal([&] { select_files({files[1], files[2]}, "Q4_K_M"); }), "no model GGUF");
  EXPECT_HAS(refusal([] { select_files({{"README.md", 1, {}, "x"}}, ""); }), "no model GGUF");
}

TEST(GgufProbe, HeaderSizeIsTheDataOffset) {
  const auto& m = test::layout_models();
  const std::string bytes = bytes_of(m.b_q8().gguf);
  const auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
  const auto size = gguf::header_size(span);
  ASSERT_TRUE(size);
  gguf_context* g = gguf_init_from_file(m.b_q8().gguf.c_str(), {true, nullptr});
  EXPECT_EQ(*size, gguf_get_data_offset(g));
  gguf_free(g);
  EXPECT_FALSE(gguf::header_size(span.first(*size / 2)));
  EXPECT_FALSE(gguf::header_size(span.first(3)));
  const std::string junk = "GGML and more bytes here";
  refusal([&] { gguf::header_size(std::as_bytes(std::span(junk.data(), junk.size()))); });
}

/// A fake hub and a download directory per test; model files are read (and converted) lazily.
class PullTest : public ::testing::Test {
 protected:
  static const test::LayoutModels& m() { return test::layout_models(); }
  static std::string b_q8() { return bytes_of(m().b_q8().gguf); }
  static std::string b_bf16() { return bytes_of(m().b_bf16().gguf); }
  static std::string a_backbone() { return bytes_of(m().a().gguf); }
  static std::string c() { return bytes_of(m().c().gguf); }
  static std::string mmproj() { return bytes_of(*m().a().mmproj); }
  static std::string head() { return bytes_of(*m().a().head_weights); }
  static std::string head_config() { return bytes_of(*m().a().head_config); }

  FakeHub hub_;
  test::TempDir dir_{"clef-pull"};
};

TEST_F(PullTest, FreshDownloadOfALayoutBRepository) {
  hub_.add("ggml-org/Clef-Flash-GGUF", "Clef-Flash-Q8_0.gguf", b_q8());
  hub_.add("ggml-org/Clef-Flash-GGUF", "Clef-Flash-BF16.gguf", b_bf16());
  hub_.add("ggml-org/Clef-Flash-GGUF", "mmproj-Clef-Flash-f16.gguf", mmproj());
  hub_.add("ggml-org/Clef-Flash-GGUF", "mmproj-Clef-Flash-bf16.gguf", mmproj());
  hub_.add("ggml-org/Clef-Flash-GGUF", "README.md", "# Clef-Flash\n", false);
  std::string log;
  const PullResult r = run_pull(hub_, "ggml-org/Clef-Flash-GGUF:Q8_0", dir_.path(), &log);
  EXPECT_EQ(r.layout, artifact::Layout::llama_cpp);
  EXPECT_EQ(r.files,
            (std::vector<std::string>{"Clef-Flash-Q8_0.gguf", "mmproj-Clef-Flash-bf16.gguf"}));
  EXPECT_EQ(bytes_of(dir_.path() / "Clef-Flash-Q8_0.gguf"), b_q8());
  EXPECT_EQ(bytes_of(dir_.path() / "mmproj-Clef-Flash-bf16.gguf"), mmproj());
  EXPECT_FALSE(fs::exists(dir_.path() / "Clef-Flash-Q8_0.gguf.part"));
  EXPECT_FALSE(fs::exists(dir_.path() / "Clef-Flash-BF16.gguf"));
  EXPECT_HAS(log, "100%");
  EXPECT_HAS(log, "verified");
  const artifact::OpenedModel opened = artifact::open_model_dir(dir_.path());
  EXPECT_EQ(opened.layout, artifact::Layout::llama_cpp);
  // A second pull finds everything in place and downloads nothing more.
  const std::size_t sent = hub_.bytes_sent("Clef-Flash-Q8_0.gguf");
  run_pull(hub_, "ggml-org/Clef-Flash-GGUF:Q8_0", dir_.path(), &log);
  EXPECT_HAS(log, "already there");
  EXPECT_LT(hub_.bytes_sent("Clef-Flash-Q8_0.gguf") - sent, b_q8().size() / 2);
}

TEST_F(PullTest, LayoutAResumesAfterTheConnectionIsCut) {
  hub_.add("bartowski/Clef-Flash-GGUF", "Clef-Flash-Q4_K_M.gguf", a_backbone(), true, true);
  hub_.add("bartowski/Clef-Flash-GGUF", "mmproj-Clef-Flash-f16.gguf", mmproj());
  hub_.add("bartowski/Clef-Flash-GGUF", "joint_head.safetensors", head());
  hub_.add("bartowski/Clef-Flash-GGUF", "joint_head_config.json", head_config(), false);
  const PullResult r = run_pull(hub_, "bartowski/Clef-Flash-GGUF", dir_.path());
  EXPECT_EQ(r.layout, artifact::Layout::hf_head);
  EXPECT_EQ(r.files.size(), 4u);
  EXPECT_EQ(bytes_of(dir_.path() / "Clef-Flash-Q4_K_M.gguf"), a_backbone());
  EXPECT_EQ(bytes_of(dir_.path() / "joint_head.safetensors"), head());
  EXPECT_EQ(bytes_of(dir_.path() / "joint_head_config.json"), head_config());
  // The cut left half the file; the retry asked for the rest with a Range.
  EXPECT_EQ(resumes_from(hub_.ranges("Clef-Flash-Q4_K_M.gguf"), a_backbone().size() / 2), 1u);
  EXPECT_LT(hub_.bytes_sent("Clef-Flash-Q4_K_M.gguf"), a_backbone().size() * 2);
  EXPECT_EQ(artifact::open_model_dir(dir_.path()).layout, artifact::Layout::hf_head);
}

TEST_F(PullTest, ResumesAPartialFileFromAnEarlierRun) {
  hub_.add("ollama/clef-flash", "clef-flash-q8_0.gguf", c());
  const std::size_t kept = 100000;
  {
    std::ofstream part(dir_.path() / "clef-flash-q8_0.gguf.part", std::ios::binary);
    part.write(c().data(), kept);
  }
  const PullResult r = run_pull(hub_, "ollama/clef-flash", dir_.path());
  EXPECT_EQ(r.layout, artifact::Layout::ollama);
  EXPECT_EQ(bytes_of(dir_.path() / "clef-flash-q8_0.gguf"), c());
  EXPECT_EQ(resumes_from(hub_.ranges("clef-flash-q8_0.gguf"), kept), 1u);
}

TEST_F(PullTest, CorruptedDownloadIsCaughtBySha256) {
  hub_.add("evil/mirror", "Clef-Flash-Q8_0.gguf", b_q8(), true, false, std::string(64, 'a'));
  const std::string msg = refusal([&] { run_pull(hub_, "evil/mirror", dir_.path()); });
  EXPECT_HAS(msg, "corrupted");
  EXPECT_HAS(msg, "sha256");
  EXPECT_FALSE(fs::exists(dir_.path() / "Clef-Flash-Q8_0.gguf"));
  EXPECT_FALSE(fs::exists(dir_.path() / "Clef-Flash-Q8_0.gguf.part"));
}

TEST_F(PullTest, RepositoryWithoutAHeadIsRefusedBeforeTheDownload) {
  hub_.add("prithivMLmods/clef-flash-GGUF", "clef-flash.Q8_0.gguf", a_backbone());
  hub_.add("prithivMLmods/clef-flash-GGUF", "mmproj-clef-flash.f16.gguf", mmproj());
  const std::string msg =
      refusal([&] { run_pull(hub_, "prithivMLmods/clef-flash-GGUF", dir_.path()); });
  EXPECT_HAS(msg, "holds no usable head");
  EXPECT_HAS(msg, "clef-flash.Q8_0.gguf");
  // Only the header was read.
  EXPECT_LT(hub_.bytes_sent("clef-flash.Q8_0.gguf"), a_backbone().size());
  EXPECT_EQ(hub_.bytes_sent("mmproj-clef-flash.f16.gguf"), 0u);
  EXPECT_TRUE(fs::is_empty(dir_.path()));
}

TEST_F(PullTest, UnknownRepositoryAndUnknownDecisionType) {
  EXPECT_HAS(refusal([&] { run_pull(hub_, "nobody/nothing", dir_.path()); }), "not found");
  const fs::path odd = dir_.path() / "odd.gguf";
  test::rewrite_gguf(test::layout_models().b_bf16().gguf, odd,
                     [](gguf_context* g) { gguf_set_val_str(g, "clef.decision.type", "ranker"); });
  hub_.add("someone/odd", "odd-Q8_0.gguf", bytes_of(odd));
  fs::remove(odd);
  const std::string msg = refusal([&] { run_pull(hub_, "someone/odd", dir_.path() / "x"); });
  EXPECT_HAS(msg, "unknown decision.type \"ranker\"");
  EXPECT_HAS(msg, "someone/odd/odd-Q8_0.gguf");
}

TEST_F(PullTest, UnreachableHub) {
  PullOptions o;
  o.reference = "a/b";
  o.dir = dir_.path();
  o.endpoint = "http://127.0.0.1:1";
  std::ostringstream progress;
  refusal([&] { pull_model(o, progress); }, ErrorKind::unavailable);
}

}  // namespace
}  // namespace clef::pull
