#include "cli/openmp_wait.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace clef::cli {

void use_passive_openmp_wait(char** argv) {
  const char* given = std::getenv("OMP_WAIT_POLICY");
  if (given != nullptr && *given != '\0') return;
  // Under valgrind /proc/self/exe is valgrind's tool, not clef: run as is.
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload != nullptr && std::strstr(preload, "vgpreload") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Only reached when exec failed: libgomp already runs with its default policy.
}

}  // namespace clef::cli
