#pragma once
// Test support: one tiny random clef model per test process (generated on first use into a fresh
// temporary directory that is removed at exit), a scoped temporary directory, and a one-time
// llama_backend_init (through backbone::ensure_llama_backend).

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

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
