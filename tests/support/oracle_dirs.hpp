#pragma once
// Oracle directories named by environment variables (held-out cases run without code changes):
// CLEF_EXTRA_RECORD_ORACLES (record encoder, *.jsonl files) and CLEF_EXTRA_HEAD_ORACLES (joint
// schema head configs) and CLEF_EXTRA_TUNE_ORACLES (head training cases).

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace clef::test {

/// The non-empty entries of a colon-separated environment variable (none when unset).
inline std::vector<std::filesystem::path> env_dirs(const char* name) {
  std::vector<std::filesystem::path> dirs;
  const char* value = std::getenv(name);
  if (value == nullptr) return dirs;
  const std::string all = value;
  std::size_t start = 0;
  while (start <= all.size()) {
    std::size_t end = all.find(':', start);
    if (end == std::string::npos) end = all.size();
    if (end > start) dirs.emplace_back(all.substr(start, end - start));
    start = end + 1;
  }
  return dirs;
}

/// The head-oracle config directories of CLEF_EXTRA_HEAD_ORACLES. Each listed directory is a
/// config directory (it holds joint_head_config.json), or a folder laid out like
/// tests/data/oracle/head/ whose sub-directories are config directories; both are accepted.
/// A listed path that is neither is returned as is, so the test fails naming it.
inline std::vector<std::filesystem::path> extra_head_config_dirs() {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  for (const fs::path& dir : env_dirs("CLEF_EXTRA_HEAD_ORACLES")) {
    if (fs::exists(dir / "joint_head_config.json") || !fs::is_directory(dir)) {
      out.push_back(dir);
      continue;
    }
    std::vector<fs::path> configs;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_directory() && fs::exists(e.path() / "joint_head_config.json")) {
        configs.push_back(e.path());
      }
    }
    std::sort(configs.begin(), configs.end());
    if (configs.empty()) configs.push_back(dir);
    out.insert(out.end(), configs.begin(), configs.end());
  }
  return out;
}

/// Every case folder (one holding a tune.json) at or below `root`, sorted.
inline std::vector<std::filesystem::path> tune_case_dirs(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  if (fs::exists(root / "tune.json")) out.push_back(root);
  if (fs::is_directory(root)) {
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.is_directory() && fs::exists(e.path() / "tune.json")) out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The head-training case folders below each directory of CLEF_EXTRA_TUNE_ORACLES. A listed path
/// that holds no case is returned as is, so the test fails naming it.
inline std::vector<std::filesystem::path> extra_tune_case_dirs() {
  std::vector<std::filesystem::path> out;
  for (const auto& dir : env_dirs("CLEF_EXTRA_TUNE_ORACLES")) {
    auto cases = tune_case_dirs(dir);
    if (cases.empty()) cases.push_back(dir);
    out.insert(out.end(), cases.begin(), cases.end());
  }
  return out;
}

}  // namespace clef::test
