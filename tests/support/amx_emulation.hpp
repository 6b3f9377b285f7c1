#pragma once
// Test support: run a test binary on ggml's AMX path everywhere. On a CPU that reports AMX the
// tests run natively; elsewhere the binary executes itself again with the AMX emulator
// (tests/support/amx_emulator.cpp, path in CLEF_AMX_EMULATOR) in LD_PRELOAD. Call
// `reexec_under_amx_emulator_if_needed()` from a static initializer, before any ggml call.

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "device/cpu_path.hpp"

namespace clef::test {

/// The AMX emulator is loaded in this process.
inline bool amx_emulated() {
  return dlsym(RTLD_DEFAULT, "clef_amx_emulated_instructions") != nullptr;
}

/// AMX instructions the emulator has carried out (0 natively).
inline long amx_emulated_instructions() {
  using Count = long (*)();
  auto count = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "clef_amx_emulated_instructions"));
  return count != nullptr ? count() : 0;
}

/// On a CPU without AMX, executes /proc/self/exe again with the emulator preloaded (returns only
/// when no re-execution is needed or it failed). Returns whether the tests run emulated.
inline bool reexec_under_amx_emulator_if_needed(const char* emulator) {
  if (device::cpu_reports_amx()) return false;
  if (amx_emulated()) return true;
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("LD_PRELOAD", emulator, 1);
  execv("/proc/self/exe", argv.data());
  return false;  // exec failed: the tests then see no AMX and fail with that
}

}  // namespace clef::test
