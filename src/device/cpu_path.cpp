#include "device/cpu_path.hpp"

#include <cstdlib>
#include <string>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "util/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace clef::device {

namespace {

constexpr const char* kAmxVariable = "GGML_CPU_AMX";

bool has_amx_name(ggml_backend_buffer_type_t buft) {
  return std::string(ggml_backend_buft_name(buft)).find("AMX") != std::string::npos;
}

}  // namespace

CpuAmx parse_cpu_amx(std::string_view value) {
  if (value == "auto") return CpuAmx::automatic;
  if (value == "on" || value == "1" || value == "true") return CpuAmx::on;
  if (value == "off" || value == "0" || value == "false") return CpuAmx::off;
  throw invalid_request("cpu_amx must be auto, on or off, got '" + std::string(value) + "'",
                        "cpu_amx");
}

std::string_view to_string(CpuAmx mode) {
  switch (mode) {
    case CpuAmx::on:
      return "on";
    case CpuAmx::off:
      return "off";
    case CpuAmx::automatic:
      break;
  }
  return "auto";
}

bool cpu_reports_amx() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  constexpr unsigned kAmxTile = 1u << 24;
  constexpr unsigned kAmxInt8 = 1u << 25;
  return (d & kAmxTile) != 0 && (d & kAmxInt8) != 0;
#else
  return false;
#endif
}

bool amx_offered() {
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (cpu == nullptr) return false;
  auto get_extra =
      reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(ggml_backend_reg_get_proc_address(
          ggml_backend_dev_backend_reg(cpu), "ggml_backend_dev_get_extra_bufts"));
  if (get_extra == nullptr) return false;
  for (ggml_backend_buffer_type_t* b = get_extra(cpu); b != nullptr && *b != nullptr; ++b) {
    if (has_amx_name(*b)) return true;
  }
  return false;
}

void use_cpu_amx(CpuAmx mode) {
  // setenv before ggml's first look (ggml_backend_amx_buffer_type reads it once per process).
  if (mode == CpuAmx::off) {
    setenv(kAmxVariable, "0", 1);
  } else if (mode == CpuAmx::on) {
    setenv(kAmxVariable, "1", 1);
  } else if (std::getenv(kAmxVariable) == nullptr && !cpu_reports_amx()) {
    setenv(kAmxVariable, "0", 0);
  }
  const bool offered = amx_offered();
  if (mode == CpuAmx::off && offered) {
    throw invalid_request(
        "cpu_amx=off: ggml's CPU backend already offers AMX in this process (it decides once, "
        "at the first model load); set cpu_amx for the process's first model",
        "cpu_amx");
  }
  if (mode == CpuAmx::on && !offered) {
    const char* env = std::getenv(kAmxVariable);
    throw invalid_request(
        std::string("cpu_amx=on: no AMX here: ") +
            (cpu_reports_amx() ? "the kernel refused the AMX tile state (arch_prctl)"
                               : "the CPU reports no AMX-TILE/AMX-INT8 (CPUID leaf 7)") +
            (env != nullptr && std::string(env) == "0"
                 ? ", or this process decided without it (GGML_CPU_AMX=0 at its first model)"
                 : "") +
            "; use cpu_amx=auto",
        "cpu_amx");
  }
}

std::string_view vector_isa() {
  if (ggml_cpu_has_avx512_vnni() != 0) return "AVX-512 VNNI";
  if (ggml_cpu_has_avx512() != 0) return "AVX-512";
  if (ggml_cpu_has_avx2() != 0) return ggml_cpu_has_avx_vnni() != 0 ? "AVX2 + AVX-VNNI" : "AVX2";
  if (ggml_cpu_has_avx() != 0) return "AVX";
  if (ggml_cpu_has_sse3() != 0) return "SSE";
  if (ggml_cpu_has_neon() != 0) return "NEON";
  return "generic";
}

std::string describe_cpu_path(bool repacked) {
  const std::string isa(vector_isa());
  if (!repacked) return isa + ", plain weights";
  if (amx_offered()) return "AMX int8 tiles + " + isa;
  return isa + ", repacked weights";
}

}  // namespace clef::device
