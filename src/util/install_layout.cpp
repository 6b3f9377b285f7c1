#include "util/install_layout.hpp"

#include <system_error>

namespace clef::util {

namespace {

std::optional<std::filesystem::path> first_existing(std::string_view name,
                                                    const std::filesystem::path& installed) {
  const std::filesystem::path dir = executable_dir();
  if (dir.empty()) return std::nullopt;
  std::error_code ec;
  for (const std::filesystem::path& p : {dir / name, dir / ".." / installed / name}) {
    if (std::filesystem::exists(p, ec)) return p.lexically_normal();
  }
  return std::nullopt;
}

}  // namespace

std::filesystem::path executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

std::optional<std::filesystem::path> shipped_data(std::string_view name) {
  return first_existing(name, std::filesystem::path("share") / "clef");
}

std::optional<std::filesystem::path> shipped_modules(std::string_view name) {
  return first_existing(name, std::filesystem::path("lib") / "clef");
}

}  // namespace clef::util
