#pragma once
// Where clef finds the files it ships beside its binary, relative to the running executable, so
// that a build tree, a moved build and an install (`cmake --install build --prefix P`: bin/clef,
// lib/, share/clef/) all work without the source tree:
//   build tree:  <dir of clef>/NAME
//   install:     <dir of clef>/../share/clef/NAME (data) or <dir of clef>/../lib/clef/NAME
//   (modules)

#include <filesystem>
#include <optional>
#include <string_view>

namespace clef::util {

/// The directory of the running executable (/proc/self/exe); empty when it cannot be read.
std::filesystem::path executable_dir();

/// The shipped data file `name` (e.g. "clef-registry.json", "oracle/coreai/fixture.json"):
/// beside the executable, else in ../share/clef/; nullopt when neither exists.
std::optional<std::filesystem::path> shipped_data(std::string_view name);

/// The shipped module directory `name` (e.g. "ggml-backends"): beside the executable, else in
/// ../lib/clef/; nullopt when neither exists.
std::optional<std::filesystem::path> shipped_modules(std::string_view name);

}  // namespace clef::util
