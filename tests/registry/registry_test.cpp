// The model registry and store, on the loopback fake hub (no internet): the shipped entry
// resolves; unknown names get suggestions; a user's entry overrides by name; a variant spanning
// two repositories downloads, verifies, resumes after a cut, catches a corrupted file by its pinned
// hash, refuses when the disk is too small, starts offline from the store without re-hashing, and
// fetches a file changed on disk again; `clef ask NAME:TAG` answers like the same files by path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "head/head_config.hpp"
#include "json/parse.hpp"
#include "pull/fake_hub.hpp"
#include "registry/model_store.hpp"
#include "registry/registry.hpp"
#include "server/child_process.hpp"
#include "support/tiny_model.hpp"
#include "testmodel/head_writer.hpp"
#include "util/error.hpp"

namespace clef::registry {
namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string sha256(const std::string& data) {
  return test::hex_digest(EVP_sha256(), data);
}

TEST(Registry, TheShippedEntryResolvesWithItsPinnedFiles) {
  Registry r;
  r.add_file(std::string(CLEF_SOURCE_DIR) + "/registry/models.json");
  const Resolved a = r.resolve("clef-flash:9b");
  EXPECT_EQ(a.reference, "clef-flash:9b-q4");
  EXPECT_EQ(r.resolve("clef-flash").reference, "clef-flash:9b-q4") << "the latest tag";
  ASSERT_EQ(a.variant->files.size(), 4u);
  std::uint64_t total = 0;
  for (const RegistryFile& f : a.variant->files) total += f.size.value_or(0);
  // The published table's per-file sizes (their sum; the table's own total, 7,002,756,992, does
  // not add up, see the registry's notes). The head config's size is the hub's.
  EXPECT_EQ(total, 6040541344u + 918165984u + 243538016u);
  EXPECT_EQ(a.variant->files[0].sha256.value(),
            "cf747351878a0e569fd9d6681395bd723e111f63a4f6fe6e26e7563dfdfa9b0a");
  EXPECT_EQ(a.variant->context_size.value(), 16384);
  try {
    r.resolve("clef-flsh:9b");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean clef-flash"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.resolve("clef-flash:70b"), Error);
  EXPECT_TRUE(Registry::looks_like_reference("clef-flash:9b"));
  EXPECT_FALSE(Registry::looks_like_reference("owner/repo:Q4_K_M"));
  EXPECT_FALSE(Registry::looks_like_reference(CLEF_SOURCE_DIR));
}

TEST(Registry, ClefTwentySevenBStandsBesideClefFlash) {
  // Issue 44: Cloudflare/clef (27B) with bartowski's Q4_K_M backbone and the authors' head, pinned
  // where the size and hash are published; clef-flash stays what `clef-flash` names.
  Registry r;
  r.add_file(std::string(CLEF_SOURCE_DIR) + "/registry/models.json");
  const Resolved a = r.resolve("clef:27b");
  EXPECT_EQ(a.reference, "clef:27b-q4");
  EXPECT_EQ(r.resolve("clef").reference, "clef:27b-q4") << "the latest tag";
  EXPECT_EQ(r.resolve("clef-flash").reference, "clef-flash:9b-q4");
  ASSERT_EQ(a.variant->files.size(), 4u);
  const RegistryFile& model = a.variant->files[0];
  EXPECT_EQ(model.role, "model");
  EXPECT_EQ(model.repository, "bartowski/Cloudflare_clef-GGUF");
  EXPECT_EQ(model.size.value(), 17203416256u);
  EXPECT_EQ(model.sha256.value(),
            "6a03997c1fe1b22580d15b540535f61b3da79e261766cac7104febc8e4651849");
  EXPECT_EQ(a.variant->files[1].role, "mmproj");
  EXPECT_FALSE(a.variant->files[1].sha256) << "no published hash: unpinned";
  EXPECT_EQ(a.variant->files[2].size.value(), 256125024u);
  EXPECT_EQ(a.variant->files[2].sha256.value(),
            "a010ac04f078e699988e4049cbea5e62c962393f59fec366640b64e8d69a4953");
  EXPECT_EQ(a.variant->context_size.value(), 16384);
}

TEST(Registry, AUserEntryReplacesTheShippedOneByName) {
  Registry r;
  r.add_file(std::string(CLEF_SOURCE_DIR) + "/registry/models.json");
  r.add(
      json::parse(R"({"format": "clef-registry/1", "models": {"clef-flash": {"tags": {"9b": "mine"},
      "variants": {"mine": {"files": [{"role": "model", "repository": "me/m", "path": "m.gguf"}]}}}}})"),
      "user");
  EXPECT_EQ(r.resolve("clef-flash:9b").reference, "clef-flash:mine");
  EXPECT_THROW(r.resolve("clef-flash:9b-q4"), Error) << "replaced whole, not merged";
  for (const char* bad :
       {R"({"format": "x", "models": {}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files": []}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "repository": "r/x", "path": "../x"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "repository": "r/x", "path": "x", "sha256": "XYZ"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"tags": {"t": "nope"}, "variants": {"v":
            {"files": [{"role": "model", "repository": "r/x", "path": "x"}]}}}}})",
        // A break test deleted a directory outside the store through these names.
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"../../victim": {"files":
            [{"role": "model", "repository": "r/x", "path": "x"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"/tmp/victim": {"files":
            [{"role": "model", "repository": "r/x", "path": "x"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"..": {"variants": {"v": {"files":
            [{"role": "model", "repository": "r/x", "path": "x"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"": {"files":
            [{"role": "model", "repository": "r/x", "path": "x"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "repository": "r/x", "path": "."}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "repository": "r/x", "path": ".verified.json"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "repository": "r/x", "path": "d/x"},
             {"role": "mmproj", "repository": "r/y", "path": "x"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "repository": "r/x", "path": "x", "size": -1}]}}}}})"}) {
    EXPECT_THROW(r.add(json::parse(bad), "bad"), Error) << bad;
  }
}

// Reported input: `--registry /dev/zero` was read without end (a FIFO blocked for ever).
TEST(Registry, ARegistryThatIsNotARegularFileIsRefusedUnread) {
  Registry r;
  for (const char* path : {"/dev/zero", "/tmp", "/nonexistent/registry.json"}) {
    try {
      r.add_file(path);
      ADD_FAILURE() << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.param(), "registry") << path;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

/// The tiny test model served by the fake hub from two repositories, as the published files are.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& m = test::tiny_model();
    model_ = read(m.backbone);
    mmproj_ = read(m.mmproj);
    head_ = read(m.head);
    config_ = read(m.head_config);
    hub_.add("fake/clef-gguf", "clef-tiny-F16.gguf", model_, true, /*cut_once=*/true);
    hub_.add("fake/clef-gguf", "mmproj-clef-tiny-f16.gguf", mmproj_);
    hub_.add("fake/clef", "joint_head.safetensors", head_);
    hub_.add("fake/clef", "joint_head_config.json", config_, /*lfs=*/false);
    registry_file_ = dir_.path() / "registry.json";
    write_registry(sha256(head_));
    store_.models_dir = dir_.path() / "models";
    store_.endpoint = hub_.endpoint();
  }
  void write_registry(const std::string& head_sha) {
    std::ofstream(registry_file_) << R"({"format": "clef-registry/1", "models": {"tiny": {
      "tags": {"latest": "f16"}, "variants": {"f16": {"files": [
        {"role": "model", "repository": "fake/clef-gguf", "path": "clef-tiny-F16.gguf",
         "size": )" + std::to_string(model_.size()) +
                                         R"(, "sha256": ")" + sha256(model_) + R"("},
        {"role": "mmproj", "repository": "fake/clef-gguf", "path": "mmproj-clef-tiny-f16.gguf",
         "size": )" + std::to_string(mmproj_.size()) +
                                         R"(, "sha256": ")" + sha256(mmproj_) + R"("},
        {"role": "head", "repository": "fake/clef", "path": "joint_head.safetensors",
         "size": )" + std::to_string(head_.size()) +
                                         R"(, "sha256": ")" + head_sha + R"("},
        {"role": "head_config", "repository": "fake/clef", "path": "joint_head_config.json"}],
      "engine": {"context_size": 2048}}}}}})";
  }
  /// `clef serve tiny:latest` from this registry, store and hub, on a free port.
  std::vector<std::string> serve_argv() const {
    return {std::string(CLEF_BINARY_DIR) + "/clef",
            "serve",
            "tiny:latest",
            "--registry",
            registry_file_.string(),
            "--models-dir",
            store_.models_dir.string(),
            "--hub-endpoint",
            hub_.endpoint(),
            "--port",
            "0",
            "--threads",
            "1"};
  }
  Resolved resolve() {
    registry_ = Registry();
    registry_.add_file(registry_file_);
    return registry_.resolve("tiny:latest");
  }

  test::TempDir dir_{"clef-registry"};
  test::FakeHub hub_;
  std::string model_, mmproj_, head_, config_;
  std::filesystem::path registry_file_;
  Registry registry_;
  StoreOptions store_;
};

TEST_F(StoreTest, DownloadsVerifiesResumesAndStartsOfflineWithoutRehashing) {
  std::ostringstream log;
  const StoredModel first = ensure_model(resolve(), store_, log);
  EXPECT_EQ(first.downloaded, 4u);
  EXPECT_EQ(read(first.model), model_);
  EXPECT_EQ(read(first.head_config), config_);
  EXPECT_NE(log.str().find("4 file(s) to download"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("unpinned"), std::string::npos);
  // The cut in the middle of the model was resumed with a Range request.
  const auto ranges = hub_.ranges("clef-tiny-F16.gguf");
  ASSERT_GE(ranges.size(), 2u);
  EXPECT_EQ(ranges.back().rfind("bytes=", 0), 0u);

  store_.offline = true;
  const StoredModel again = ensure_model(resolve(), store_, log);
  EXPECT_EQ(again.downloaded, 0u);
  EXPECT_EQ(again.hashed, 0u) << "verified files are not hashed again";
  EXPECT_EQ(again.model, first.model);

  // A file changed on disk after its verification: found, and offline that is an error.
  {
    std::string changed = model_;
    changed[changed.size() / 2] ^= 1;
    std::ofstream(first.model, std::ios::binary) << changed;
  }
  EXPECT_THROW(ensure_model(resolve(), store_, log), Error);
  // Online, it is fetched again.
  store_.offline = false;
  const StoredModel fixed = ensure_model(resolve(), store_, log);
  EXPECT_EQ(fixed.downloaded, 1u);
  EXPECT_EQ(read(fixed.model), model_);
  for (const std::string& line : verify_stored(resolve(), store_)) {
    EXPECT_NE(line.find(": ok"), std::string::npos) << line;
  }
}

/// Reported input: `clef models verify` of a model never downloaded failed writing its records
/// ("cannot write .../.verified.json.tmp (disk full?)").
TEST_F(StoreTest, VerifyingAModelNeverDownloadedSaysSoAndWritesNothing) {
  const std::vector<std::string> lines = verify_stored(resolve(), store_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("not downloaded"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find(": ok"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(store_dir(resolve(), store_)));
}

TEST_F(StoreTest, ACorruptedFileIsCaughtByItsPinnedHashAndRemoved) {
  write_registry(std::string(64, 'a'));  // the head's pin does not match what the hub serves
  std::ostringstream log;
  try {
    ensure_model(resolve(), store_, log);
    FAIL() << "a file that does not match its pin must not be used";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("joint_head.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(store_dir(resolve(), store_) / "joint_head.safetensors"));
}

TEST_F(StoreTest, TooLittleDiskOrOfflineWithMissingFilesIsRefusedBeforeDownloading) {
  std::ostringstream log;
  store_.free_bytes = 1000;
  try {
    ensure_model(resolve(), store_, log);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "disk_full") << e.what();
  }
  EXPECT_EQ(hub_.bytes_sent("clef-tiny-F16.gguf"), 0u);
  store_.free_bytes.reset();
  store_.offline = true;
  try {
    ensure_model(resolve(), store_, log);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.param(), "offline") << e.what();
  }
}

TEST_F(StoreTest, ClefServeARegistryNameDownloadsOnceThenServesOffline) {
  using namespace std::chrono_literals;
  const std::string request = read(std::string(CLEF_SOURCE_DIR) + "/examples/card.json");
  std::string first_body;
  for (const bool offline : {false, true}) {
    std::vector<std::string> argv = serve_argv();
    if (offline) argv.push_back("--offline");
    server::testing::ChildProcess serve(argv, {}, (dir_.path() / "serve.log").string());
    const int port = server::testing::port_from_banner(serve.read_line(120s));
    ASSERT_GT(port, 0);
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60, 0);
    httplib::Result res;
    for (int i = 0; i < 600; ++i) {
      res = client.Get("/health");
      if (res && res->status == 200) break;
      std::this_thread::sleep_for(50ms);
    }
    res = client.Post("/v1/decisions", request, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    auto models = client.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_NE(models->body.find(R"("id":"tiny")"), std::string::npos) << models->body;
    if (offline) {
      EXPECT_EQ(res->body, first_body) << "the same answer from the store, offline";
    } else {
      first_body = res->body;
    }
    serve.send_signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(30s).value_or(-1), 0);
  }
}

/// Issue 28, item 5: `clef serve NAME:TAG` killed with SIGKILL while it downloads the backbone;
/// the next start resumes the file from its .part (a Range request from where it stopped), checks
/// its sha256 and serves.
TEST_F(StoreTest, KilledDuringADownloadResumesAndVerifiesOnTheNextStart) {
  using namespace std::chrono_literals;
  const std::vector<std::string> argv = serve_argv();
  hub_.set_pace(2ms);  // ~2 MB/s: seconds for the backbone
  {
    server::testing::ChildProcess serve(argv, {}, (dir_.path() / "killed.log").string());
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (hub_.bytes_sent("clef-tiny-F16.gguf") < (1u << 20) &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_GE(hub_.bytes_sent("clef-tiny-F16.gguf"), 1u << 20);
    serve.send_signal(SIGKILL);
    ASSERT_TRUE(serve.wait_exit(10s).has_value());
  }
  const auto dir = store_dir(resolve(), store_);
  const auto part = dir / "clef-tiny-F16.gguf.part";
  ASSERT_TRUE(std::filesystem::exists(part)) << "the partial download is kept";
  const auto kept = std::filesystem::file_size(part);
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, model_.size());
  EXPECT_FALSE(std::filesystem::exists(dir / "clef-tiny-F16.gguf")) << "nothing half-written "
                                                                       "under the final name";

  hub_.set_pace(0us);
  server::testing::ChildProcess serve(argv, {}, (dir_.path() / "resumed.log").string());
  const int port = server::testing::port_from_banner(serve.read_line(120s));
  ASSERT_GT(port, 0) << read((dir_.path() / "resumed.log").string());
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  httplib::Result res;
  for (int i = 0; i < 1200 && !(res && res->status == 200); ++i) {
    res = client.Get("/health");
    if (!(res && res->status == 200)) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(res && res->status == 200) << read((dir_.path() / "resumed.log").string());
  const auto ranges = hub_.ranges("clef-tiny-F16.gguf");
  ASSERT_GE(ranges.size(), 2u);
  // The resumed request starts at or before what the killed run had written (its last write may
  // not have reached the disk), never at 0.
  // ranges[0]: the killed run's request; ranges[1]: the first of the restart.
  EXPECT_EQ(ranges[0], "");
  EXPECT_EQ(ranges[1].rfind("bytes=", 0), 0u) << ranges[1];
  EXPECT_NE(ranges[1], "bytes=0-") << "downloaded again from the start";
  for (const std::string& line : verify_stored(resolve(), store_)) {
    EXPECT_NE(line.find(": ok"), std::string::npos) << line;
  }
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait_exit(30s).value_or(-1), 0);
}

/// Issue 28, item 5: the store fills up mid-download (here the file size limit of `ulimit -f`,
/// with SIGXFSZ ignored, makes the write fail as ENOSPC would): a clear error at once, not
/// retries, and nothing half-written taken for a verified file.
TEST_F(StoreTest, AStoreThatFillsUpMidDownloadIsAClearErrorAndNothingIsVerified) {
  using namespace std::chrono_literals;
  const std::string clef = std::string(CLEF_BINARY_DIR) + "/clef";
  const std::string command = "trap '' XFSZ; ulimit -f 4096; exec '" + clef +
                              "' serve tiny:latest --registry '" + registry_file_.string() +
                              "' --models-dir '" + store_.models_dir.string() +
                              "' --hub-endpoint " + hub_.endpoint() + " --port 0 --threads 1";
  const std::string log_file = (dir_.path() / "full.log").string();
  server::testing::ChildProcess serve({"/bin/sh", "-c", command}, {}, log_file);
  const auto code = serve.wait_exit(60s);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  const std::string log = read(log_file);
  EXPECT_NE(log.find("is the model store full?"), std::string::npos) << log;
  EXPECT_NE(log.find("clef-tiny-F16.gguf.part"), std::string::npos) << log;
  EXPECT_EQ(log.find("listening"), std::string::npos) << log;
  const auto dir = store_dir(resolve(), store_);
  EXPECT_FALSE(std::filesystem::exists(dir / "clef-tiny-F16.gguf"));
  for (const std::string& line : verify_stored(resolve(), store_)) {
    if (line.rfind("clef-tiny-F16.gguf", 0) == 0) {
      EXPECT_NE(line.find("missing"), std::string::npos) << line;
    }
  }
}

TEST_F(StoreTest, ClefAskWithARegistryNameAnswersLikeTheFilesByPath) {
  const std::string clef = std::string(CLEF_BINARY_DIR) + "/clef";
  const std::string request = std::string(CLEF_SOURCE_DIR) + "/examples/card.json";
  const std::string out = (dir_.path() / "by-name.json").string();
  const std::string by_path = (dir_.path() / "by-path.json").string();
  const std::string common = " --threads 1 --request " + request;
  ASSERT_EQ(std::system((clef + " ask tiny:latest --registry " + registry_file_.string() +
                         " --models-dir " + store_.models_dir.string() + " --hub-endpoint " +
                         hub_.endpoint() + common + " > " + out + " 2>/dev/null")
                            .c_str()),
            0);
  const auto dir = store_.models_dir / "tiny" / "f16";
  ASSERT_EQ(std::system((clef + " ask --model " + (dir / "clef-tiny-F16.gguf").string() +
                         " --mmproj " + (dir / "mmproj-clef-tiny-f16.gguf").string() + " --head " +
                         (dir / "joint_head.safetensors").string() + " --context-size 2048" +
                         common + " --alias tiny > " + by_path + " 2>/dev/null")
                            .c_str()),
            0);
  EXPECT_FALSE(read(out).empty());
  EXPECT_EQ(read(out), read(by_path));
}

/// Issue 53, found as a new user: the store's offline hint names --hub-endpoint, which `clef pull`
/// refused (it only took --endpoint): pull takes both now.
TEST_F(StoreTest, ClefPullTakesTheHubEndpointFlagTheHintsName) {
  const std::string clef = std::string(CLEF_BINARY_DIR) + "/clef";
  const std::string log = (dir_.path() / "pull.log").string();
  ASSERT_EQ(std::system((clef + " pull tiny:latest --registry " + registry_file_.string() +
                         " --models-dir " + store_.models_dir.string() + " --hub-endpoint " +
                         hub_.endpoint() + " > " + log + " 2>&1")
                            .c_str()),
            0)
      << read(log);
  for (const std::string& line : verify_stored(resolve(), store_)) {
    EXPECT_NE(line.find(": ok"), std::string::npos) << line;
  }
}

/// Issue 50: a registry entry of one's own names a head fitted with `clef tune`, a file on this
/// machine ("local", relative to the registry file's folder), beside the hub's backbone and mmproj.
TEST_F(StoreTest, AnEntryOfOnesOwnNamesALocalHeadUsedWhereItIs) {
  const std::filesystem::path mine = dir_.path() / "mine";
  const std::filesystem::path heads = mine / "heads";
  std::filesystem::create_directories(heads);
  testmodel::write_head(heads, head::read_head_config(test::tiny_model().head_config), 77,
                        head::SafetensorsDtype::f32);
  const std::string tuned = read(heads / "joint_head.safetensors");
  const std::filesystem::path registry = mine / "registry.json";
  const auto write = [&](const std::string& head_file, const std::string& pin) {
    std::ofstream(registry) << R"({"format": "clef-registry/1", "models": {"tickets": {
      "tags": {"latest": "v1"}, "variants": {"v1": {"files": [
        {"role": "model", "repository": "fake/clef-gguf", "path": "clef-tiny-F16.gguf",
         "size": )" + std::to_string(model_.size()) +
                                   R"(, "sha256": ")" + sha256(model_) + R"("},
        {"role": "mmproj", "repository": "fake/clef-gguf", "path": "mmproj-clef-tiny-f16.gguf"},
        {"role": "head", "local": ")" +
                                   head_file + R"(", "sha256": ")" + pin + R"("},
        {"role": "head_config", "local": "heads/joint_head_config.json"}],
      "engine": {"context_size": 2048}}}}}})";
  };
  write("heads/joint_head.safetensors", sha256(tuned));
  Registry r;
  r.add_file(registry);
  const Resolved resolved = r.resolve("tickets");
  std::ostringstream log;
  const StoredModel stored = ensure_model(resolved, store_, log);
  EXPECT_EQ(stored.head, std::filesystem::absolute(heads / "joint_head.safetensors"));
  EXPECT_EQ(stored.head_config, std::filesystem::absolute(heads / "joint_head_config.json"));
  EXPECT_EQ(stored.downloaded, 2u) << "the backbone and mmproj only: " << log.str();
  EXPECT_FALSE(std::filesystem::exists(stored.dir / "joint_head.safetensors")) << "not copied";
  const std::vector<std::string> lines = verify_stored(resolved, store_);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("(local): ok"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("(local): ok, not pinned"), std::string::npos) << lines[1];

  // `clef ask tickets` answers with the local head: as the same files by path, and not as the
  // published head does.
  const std::string clef = std::string(CLEF_BINARY_DIR) + "/clef";
  const std::string common =
      " --threads 1 --request " + std::string(CLEF_SOURCE_DIR) + "/examples/card.json";
  const std::string by_name = (dir_.path() / "by-name.json").string();
  const std::string by_path = (dir_.path() / "by-path.json").string();
  const std::string published = (dir_.path() / "published.json").string();
  ASSERT_EQ(std::system((clef + " ask tickets --registry " + registry.string() + " --models-dir " +
                         store_.models_dir.string() + " --offline" + common + " > " + by_name +
                         " 2>/dev/null")
                            .c_str()),
            0);
  const std::string backbone = " --model " + stored.model.string() + " --mmproj " +
                               stored.mmproj.string() + " --context-size 2048 --alias tickets";
  ASSERT_EQ(std::system((clef + " ask" + backbone + " --head " +
                         (heads / "joint_head.safetensors").string() + common + " > " + by_path +
                         " 2>/dev/null")
                            .c_str()),
            0);
  ASSERT_EQ(std::system((clef + " ask" + backbone + " --head " + test::tiny_model().head.string() +
                         common + " > " + published + " 2>/dev/null")
                            .c_str()),
            0);
  EXPECT_FALSE(read(by_name).empty());
  EXPECT_EQ(read(by_name), read(by_path));
  EXPECT_NE(read(by_name), read(published));

  // A changed local head is refused by its pin, a missing one by its path, each naming it.
  write("heads/joint_head.safetensors", std::string(64, 'a'));
  Registry changed;
  changed.add_file(registry);
  try {
    ensure_model(changed.resolve("tickets"), store_, log);
    FAIL() << "a local file that does not match its pin must not be used";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the registry pins"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"local\""), std::string::npos) << e.what();
  }
  write("heads/gone.safetensors", sha256(tuned));
  Registry gone;
  gone.add_file(registry);
  try {
    ensure_model(gone.resolve("tickets"), store_, log);
    FAIL() << "a missing local file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gone.safetensors"), std::string::npos) << e.what();
  }
  // A head_config left out is taken beside the local head, as --head takes it (reported: the
  // error said it was not beside the backbone).
  {
    write("heads/joint_head.safetensors", sha256(tuned));
    std::string text = read(registry);
    const std::string cfg = R"(,
        {"role": "head_config", "local": "heads/joint_head_config.json"}])";
    const auto at = text.find(cfg);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, cfg.size(), "]");
    std::ofstream(mine / "no-config.json") << text;
    const std::string log = (dir_.path() / "no-config.log").string();
    EXPECT_EQ(std::system((clef + " ask tickets --registry " + (mine / "no-config.json").string() +
                           " --models-dir " + store_.models_dir.string() + " --offline" + common +
                           " > " + log + " 2>&1")
                              .c_str()),
              0)
        << read(log);
  }
  // Reported inputs: a local path that is a folder or a device said "no such file"; a size that
  // is wrong was taken; a role given twice took the last.
  for (const auto& [head_file, says] : std::vector<std::pair<std::string, std::string>>{
           {"heads", "is not a regular file"}, {"/dev/zero", "is not a regular file"}}) {
    write(head_file, sha256(tuned));
    Registry r2;
    r2.add_file(registry);
    try {
      ensure_model(r2.resolve("tickets"), store_, log);
      FAIL() << head_file;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  {
    Registry sized;
    sized.add(json::parse(R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v":
        {"files": [{"role": "model", "local": ")" +
                          (heads / "joint_head.safetensors").string() + R"(", "size": 5}]}}}}})"),
              "sized");
    EXPECT_THROW(ensure_model(sized.resolve("a"), store_, log), Error);
  }
  // A file that is both local and a repository's, or a local path that is empty, is refused.
  for (const char* bad :
       {R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "local": "m.gguf", "repository": "r/x", "path": "x"}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "local": ""}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "local": 3}]}}}}})",
        R"({"format": "clef-registry/1", "models": {"a": {"variants": {"v": {"files":
            [{"role": "model", "local": "m.gguf"}, {"role": "head", "local": "a.safetensors"},
             {"role": "head", "local": "b.safetensors"}]}}}}})"}) {
    Registry b;
    EXPECT_THROW(b.add(json::parse(bad), "bad"), Error) << bad;
  }
}

}  // namespace
}  // namespace clef::registry
