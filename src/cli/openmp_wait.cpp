#include "cli/openmp_wait.hpp"

#include <unistd.h>

#include <cstdlib>

namespace clef::cli {

void use_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Only reached when exec failed: libgomp already runs with its default policy.
}

}  // namespace clef::cli
