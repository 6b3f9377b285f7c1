#pragma once
// Test support: the standard output of a shell command (popen), "" when it cannot start.

#include <cstdio>
#include <memory>
#include <string>

namespace clef::test {

inline std::string run_command(const std::string& command) {
  std::string out;
  std::unique_ptr<FILE, decltype(&pclose)> pipe(popen(command.c_str(), "r"), &pclose);
  if (!pipe) return out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe.get())) > 0;) out.append(buf, n);
  return out;
}

}  // namespace clef::test
