// Issue 51's kernel figures: ggml-cpu's repacked Q4_K / Q6_K x Q8_K GEMMs alone, one thread, on
// random blocks, in GMAC/s, beside the core's ceilings (14 independent register-only instances of
// vpdpbusd zmm, vpdpbusd ymm and vpmaddubsw ymm in a loop, where this build has them).
// `LD_LIBRARY_PATH` picks the libggml-cpu.so to measure, so two builds of the kernels can be
// compared side by side:
//
//   build/bench/clef_repacked_gemm_bench [q4_K|q6_K|peak|ports] [K ROWS COLS [REPS]]
//     (default: q4_K and q6_K at 4096 x 512 x 1536, then peak; best of REPS = 7; ports: what
//     the tile's scale, min and float instructions cost beside vpdpbusd zmm, in its slots)
// Prints one line a measurement: kernel, K x rows x columns, best ms, GMAC/s.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml.h"

extern "C" {
void ggml_gemm_q4_K_8x8_q8_K(int n, float* s, std::size_t bs, const void* vx, const void* vy,
                             int nr, int nc);
void ggml_gemm_q6_K_8x8_q8_K(int n, float* s, std::size_t bs, const void* vx, const void* vy,
                             int nr, int nc);
}

namespace {

// The interleaved blocks of the pinned tree's ggml-cpu/repack.h (sizes only matter here).
struct BlockQ4Kx8 {
  ggml_fp16_t d[8];
  ggml_fp16_t dmin[8];
  std::uint8_t scales[96];
  std::uint8_t qs[1024];
};
struct BlockQ6Kx8 {
  ggml_fp16_t d[8];
  std::int8_t scales[128];
  std::uint8_t ql[1024];
  std::uint8_t qh[512];
};
struct BlockQ8Kx4 {
  float d[4];
  std::int8_t qs[1024];
  std::int16_t bsums[64];
};

using Gemm = void (*)(int, float*, std::size_t, const void*, const void*, int, int);

template <typename Block>
void fill(std::vector<Block>& blocks, std::mt19937& rng) {
  std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
  for (Block& b : blocks) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(&b);
    for (std::size_t i = 0; i < sizeof(Block); ++i) bytes[i] = static_cast<std::uint8_t>(rng());
    for (ggml_fp16_t& d : b.d) d = ggml_fp32_to_fp16(scale(rng));
  }
}

/// Best-of-`reps` milliseconds of one GEMM of `k` x `rows` x `cols` (rows a multiple of 4,
/// cols of 8), on weights of type `Block`.
template <typename Block>
double time_gemm(Gemm gemm, int k, int rows, int cols, int reps) {
  const int nb = k / 256;
  std::mt19937 rng(1);
  std::vector<Block> w(static_cast<std::size_t>(cols / 8) * nb);
  fill(w, rng);
  std::vector<BlockQ8Kx4> a(static_cast<std::size_t>(rows / 4) * nb);
  for (BlockQ8Kx4& b : a) {
    for (float& d : b.d) d = 1e-2f;
    for (std::int8_t& x : b.qs) x = static_cast<std::int8_t>(static_cast<int>(rng() % 255) - 127);
    std::memset(b.bsums, 0, sizeof b.bsums);
    for (int j = 0; j < 1024; ++j) {  // ggml's bsum index of quant j (repack.cpp)
      b.bsums[(((j & 31) >> 3) << 2) + ((j >> 8) << 4) + ((j >> 6) & 3)] += b.qs[j];
    }
  }
  std::vector<float> out(static_cast<std::size_t>(rows) * cols);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm(k, out.data(), static_cast<std::size_t>(cols), w.data(), a.data(), rows, cols);
    best = std::min(
        best,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// 14 independent register-only instances of one instruction (destinations 0-13, sources 14 and
// 15, all ones by INIT), `left` times: the instruction's throughput on one core.
#define CLEF_PEAK_ONE(INSN, REG, N) INSN " %%" REG "14, %%" REG "15, %%" REG #N "\n\t"
#define CLEF_PEAK_INIT(INIT, REG, N) INIT " %%" REG #N ", %%" REG #N ", %%" REG #N "\n\t"
// The 14 instances, destinations 0-13.
#define CLEF_PEAK_14(INSN, REG)                                                               \
  CLEF_PEAK_ONE(INSN, REG, 0)                                                                 \
  CLEF_PEAK_ONE(INSN, REG, 1) CLEF_PEAK_ONE(INSN, REG, 2) CLEF_PEAK_ONE(INSN, REG, 3)         \
      CLEF_PEAK_ONE(INSN, REG, 4) CLEF_PEAK_ONE(INSN, REG, 5) CLEF_PEAK_ONE(INSN, REG, 6)     \
          CLEF_PEAK_ONE(INSN, REG, 7) CLEF_PEAK_ONE(INSN, REG, 8) CLEF_PEAK_ONE(INSN, REG, 9) \
              CLEF_PEAK_ONE(INSN, REG, 10) CLEF_PEAK_ONE(INSN, REG, 11)                       \
                  CLEF_PEAK_ONE(INSN, REG, 12) CLEF_PEAK_ONE(INSN, REG, 13)
#define CLEF_PEAK_LOOP(INSN, REG, INIT)                                                       \
  __asm__ volatile(CLEF_PEAK_INIT(INIT, REG, 14) CLEF_PEAK_INIT(                              \
                       INIT, REG, 15) "1:\n\t" CLEF_PEAK_14(INSN, REG) "dec %0\n\tjnz 1b\n\t" \
                   : "+r"(left)                                                               \
                   :                                                                          \
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",  \
                     "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc")

enum class Peak { vpdpbusd_zmm, vpdpbusd_ymm, vpmaddubsw_ymm };

/// Products a second (G/s) of `what` on one core, best of 3: vpdpbusd zmm (64 a instruction,
/// AVX-512 VNNI), vpdpbusd ymm (32, AVX-VNNI's VEX form) or vpmaddubsw ymm (32, AVX2); 0 where
/// this build lacks the instruction set.
double peak(Peak what) {
  const long iterations = 20'000'000;  // x 14 instructions
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    long left = iterations;
    int products = 0;
    const auto t0 = std::chrono::steady_clock::now();
    switch (what) {
      case Peak::vpdpbusd_zmm:
#if defined(__AVX512VNNI__) && defined(__GNUC__)
        CLEF_PEAK_LOOP("vpdpbusd", "zmm", "vpternlogd $0xff,");
        products = 64;
#endif
        break;
      case Peak::vpdpbusd_ymm:
#if defined(__AVXVNNI__) && defined(__GNUC__)
        CLEF_PEAK_LOOP("%{vex%} vpdpbusd", "ymm", "vpcmpeqd");
        products = 32;
#endif
        break;
      case Peak::vpmaddubsw_ymm:
#if defined(__AVX2__) && defined(__GNUC__)
        CLEF_PEAK_LOOP("vpmaddubsw", "ymm", "vpcmpeqd");
        products = 32;
#endif
        break;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(iterations) * 14 * products / s / 1e9);
  }
  return best;
}

#if defined(__AVX512VNNI__) && defined(__GNUC__)
// The 14 vpdpbusd zmm chains of CLEF_PEAK_LOOP plus two instances of EXTRA (destinations 16 and
// 17) a round; the sources hold 0x3fffffff (a normal float: no slow path for the FP ones).
#define CLEF_MIX_LOOP(EXTRA)                                                                     \
  __asm__ volatile(                                                                              \
      "vpternlogd $0xff, %%zmm14, %%zmm14, %%zmm14\n\tvpsrld $2, %%zmm14, %%zmm14\n\t"           \
      "vmovdqa64 %%zmm14, %%zmm15\n\t1:\n\t" CLEF_PEAK_14("vpdpbusd", "zmm")                     \
          CLEF_PEAK_ONE(EXTRA, "zmm", 16) CLEF_PEAK_ONE(EXTRA, "zmm", 17) "dec %0\n\tjnz 1b\n\t" \
      : "+r"(left)                                                                               \
      :                                                                                          \
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "cc")

/// Seconds of `iterations` rounds of 14 vpdpbusd zmm plus two of instruction `extra` (0: vpord,
/// the baseline, 1 vpmulld, 2 vpdpwssd, 3 vfmadd231ps, 4 vpaddd), best of 3.
double mix_seconds(int extra, long iterations) {
  double best = 1e300;
  for (int r = 0; r < 3; ++r) {
    long left = iterations;
    const auto t0 = std::chrono::steady_clock::now();
    switch (extra) {
      case 0:
        CLEF_MIX_LOOP("vpord");  // vpord: a logic op (free beside the multiplies, measured)
        break;
      case 1:
        CLEF_MIX_LOOP("vpmulld");
        break;
      case 2:
        CLEF_MIX_LOOP("vpdpwssd");
        break;
      case 3:
        CLEF_MIX_LOOP("vfmadd231ps");
        break;
      default:
        CLEF_MIX_LOOP("vpaddd");
        break;
    }
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
#endif

/// What the Q4_K tile's other instructions cost beside vpdpbusd zmm on this core, in vpdpbusd
/// slots an instruction: (time with two of them a round - time with two logic ops) / time of the
/// 14 vpdpbusd x 14 / 2. 1: the instruction takes the vpdpbusd pipes; 0: it runs beside them.
void report_ports() {
#if defined(__AVX512VNNI__) && defined(__GNUC__)
  const long iterations = 20'000'000;
  const double base = mix_seconds(0, iterations);
  const char* names[] = {"vpmulld", "vpdpwssd", "vfmadd231ps", "vpaddd"};
  for (int i = 0; i < 4; ++i) {
    const double t = mix_seconds(i + 1, iterations);
    std::printf("ports  %-12s beside 14 vpdpbusd zmm: %.2f vpdpbusd slots an instruction\n",
                names[i], (t - base) / base * 14 / 2);
  }
#else
  std::printf("ports  (needs AVX-512 VNNI in this build)\n");
#endif
}

void report(const char* kernel, int k, int rows, int cols, double ms) {
  std::printf("%-6s %6d x %5d x %6d  %9.3f ms  %6.0f GMAC/s\n", kernel, k, rows, cols, ms,
              static_cast<double>(k) * rows * cols / ms / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  const int k = argc > 2 ? std::atoi(argv[2]) : 4096;
  const int rows = argc > 3 ? std::atoi(argv[3]) : 512;
  const int cols = argc > 4 ? std::atoi(argv[4]) : 1536;
  const int reps = argc > 5 ? std::atoi(argv[5]) : 7;
  if ((what != "all" && what != "q4_K" && what != "q6_K" && what != "peak" && what != "ports") ||
      k <= 0 || k % 256 != 0 || rows <= 0 || rows % 4 != 0 || cols <= 0 || cols % 8 != 0 ||
      reps <= 0) {
    std::fprintf(stderr,
                 "usage: %s [q4_K|q6_K|peak|ports] [K ROWS COLS [REPS]]\n"
                 "  K a multiple of 256, ROWS of 4, COLS of 8\n",
                 argv[0]);
    return 2;
  }
  if (what == "all" || what == "q4_K") {
    report("q4_K", k, rows, cols,
           time_gemm<BlockQ4Kx8>(ggml_gemm_q4_K_8x8_q8_K, k, rows, cols, reps));
  }
  if (what == "all" || what == "q6_K") {
    report("q6_K", k, rows, cols,
           time_gemm<BlockQ6Kx8>(ggml_gemm_q6_K_8x8_q8_K, k, rows, cols, reps));
  }
  if (what == "all" || what == "peak") {
    const struct {
      Peak what;
      const char* name;
    } peaks[] = {{Peak::vpdpbusd_zmm, "vpdpbusd zmm (AVX-512 VNNI)"},
                 {Peak::vpdpbusd_ymm, "vpdpbusd ymm (AVX-VNNI)"},
                 {Peak::vpmaddubsw_ymm, "vpmaddubsw ymm (AVX2)"}};
    for (const auto& p : peaks) {
      const double g = peak(p.what);
      std::printf("peak   %s, 14 chains: %.0f GMAC/s%s\n", p.name, g,
                  g == 0 ? " (not in this build)" : "");
    }
  }
  if (what == "ports") report_ports();
  return 0;
}
