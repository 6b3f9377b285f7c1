#pragma once
// Reading test data files (tests/data) for the vision tests.

#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace clef::test {

inline std::string data_path(const std::string& relative) {
  return std::string(CLEF_TEST_DATA) + "/" + relative;
}

/// The whole file at `path` (absolute); throws std::runtime_error if it cannot be read.
inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace clef::test
