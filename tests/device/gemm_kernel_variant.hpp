// Which build of ggml-cpu's repacked GEMM kernels a kernel test checks
// (tests/device/CMakeLists.txt): the libggml-cpu it links (built for this CPU, -march=native), or,
// where CLEF_GEMM_ISA_AVX2 is defined (and CLEF_GEMM_ISA_AVX_VNNI), the pinned tree's
// arch/x86/repack.cpp compiled into the test binary for one instruction set (its definitions take
// the place of the library's), so that the AVX2 kernels are checked on a CPU that has AVX-512 too.
#pragma once

#include <string>

#include "ggml-cpu.h"

// The test-name prefix of the variant.
#ifndef CLEF_GEMM_VARIANT
#define CLEF_GEMM_VARIANT Native
#endif

namespace clef_test {

/// True when this binary's Q4_K kernel is clef's (AVX-512 VNNI or AVX2 with FMA and F16C) and the
/// CPU can run it; otherwise false with the reason in `why`.
inline bool has_clef_q4_K_kernel(std::string& why) {
#if defined(CLEF_GEMM_ISA_AVX2)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    why = "this CPU has no AVX2 and FMA";
    return false;
  }
#if defined(CLEF_GEMM_ISA_AVX_VNNI)
  if (!__builtin_cpu_supports("avxvnni")) {
    why = "this CPU has no AVX-VNNI";
    return false;
  }
#endif
  return true;
#else
  if (ggml_cpu_has_avx512_vnni() != 0) return true;
  if (ggml_cpu_has_avx2() != 0 && ggml_cpu_has_fma() != 0 && ggml_cpu_has_f16c() != 0 &&
      ggml_cpu_has_avx512() == 0)
    return true;
  why = "ggml-cpu has neither the AVX-512 VNNI nor the AVX2 Q4_K kernel of clef";
  return false;
#endif
}

}  // namespace clef_test
