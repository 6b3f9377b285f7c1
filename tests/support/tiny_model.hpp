#pragma once
// Test support: one tiny random clef model per test process (generated on first use into a fresh
// temporary directory that is removed at exit), a scoped temporary directory, and a one-time
// llama_backend_init (through backbone::ensure_llama_backend).

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backbone/llama_handles.hpp"
#include "llama.h"
#include "testmodel/make_test_model.hpp"

namespace clef::test {

/// A fresh directory under the system temp dir (mkdtemp), removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "clef-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Seed of the shared tiny model.
inline constexpr std::uint64_t kTinySeed = 7;

/// The shared tiny model (preset "tiny", seed kTinySeed), made once per process.
inline const testmodel::MadeModel& tiny_model() {
  static TempDir dir("clef-tiny");
  static const testmodel::MadeModel made = [] {
    testmodel::MakeOptions o;
    o.dir = dir.path() / "model";
    o.seed = kTinySeed;
    o.preset = "tiny";
    return testmodel::make_test_model(o);
  }();
  return made;
}

/// The test model of `preset` (seed kTinySeed), made once per process: the shared tiny model for
/// "tiny"; "small-27b" is Clef 27B's ratios (value heads 3x key heads, 6 query heads on one KV
/// head, a 320-wide head and projector: other recurrent-state and KV sizes than clef-flash's).
inline const testmodel::MadeModel& preset_model(const std::string& preset) {
  if (preset == "tiny") return tiny_model();
  static TempDir dir("clef-presets");
  static std::map<std::string, testmodel::MadeModel> made;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto it = made.find(preset);
  if (it == made.end()) {
    testmodel::MakeOptions o;
    o.dir = dir.path() / preset;
    o.seed = kTinySeed;
    o.preset = preset;
    it = made.emplace(preset, testmodel::make_test_model(o)).first;
  }
  return it->second;
}

/// The presets the model-parameterized backbone, batching, snapshot and state-cache tests run on
/// (issue 44: clef-flash's family shape and Clef 27B's), and a gtest name for each.
inline const std::vector<std::string>& model_presets() {
  static const std::vector<std::string> presets = {"tiny", "small-27b"};
  return presets;
}
inline std::string preset_test_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param == "tiny" ? "Tiny" : "Small27b";
}

/// backbone::ensure_llama_backend(): llama_backend_init once per process, llama's log at warnings
/// and errors. Tests that call it link clef_backbone.
inline void ensure_llama_backend() {
  backbone::ensure_llama_backend();
}

/// The bytes of a file.
inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace clef::test
