#pragma once
// The CPU's matrix path: whether ggml's CPU backend offers its AMX buffer type (Intel AMX int8
// tiles, for Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K/IQ4_XS and F16 weights) and which vector ISA the rest
// of ggml-cpu was built for (AVX-512 VNNI, AVX-512, AVX2, ...). clef compiles the AMX path in
// (cmake/llama.cmake) and chooses it per process with the engine parameter `cpu_amx`.

#include <string>
#include <string_view>

namespace clef::device {

/// The engine parameter cpu_amx: `automatic` uses AMX where the CPU has it, `on` requires it,
/// `off` never uses it.
enum class CpuAmx { automatic, on, off };

/// "auto", "on", "off" (also 1/0, true/false). Throws clef::Error (invalid_request, param
/// "cpu_amx") for anything else.
CpuAmx parse_cpu_amx(std::string_view value);

/// "auto", "on" or "off".
std::string_view to_string(CpuAmx mode);

/// The CPU reports AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25). Whether the kernel
/// grants the tile state is ggml's question (arch_prctl in ggml_amx_init).
bool cpu_reports_amx();

/// Sets what ggml's CPU backend does about AMX in this process, before it first decides (its
/// list of extra buffer types is made once per process, at the first model load):
///  - off: GGML_CPU_AMX=0, no AMX buffer type;
///  - automatic: GGML_CPU_AMX as the environment has it, else 0 on a CPU that reports no AMX (so
///    that ggml does not ask the kernel and print "AMX is not ready to be used!"), else ggml's
///    own answer (the AMX buffer type where the kernel grants the tile state);
///  - on: GGML_CPU_AMX=1, and the AMX buffer type must be there.
/// Throws clef::Error (invalid_request, param "cpu_amx") when the result is not what `mode` asks:
/// `on` on a CPU or kernel without AMX, or a mode other than this process's first (ggml decided).
void use_cpu_amx(CpuAmx mode);

/// ggml's CPU backend offers the AMX buffer type in this process (asks ggml: decides it when it
/// has not yet, see use_cpu_amx).
bool amx_offered();

/// The vector ISA ggml-cpu was compiled for, best first: "AVX-512 VNNI", "AVX-512",
/// "AVX2 + AVX-VNNI", "AVX2", "AVX", "SSE", "NEON", or "generic".
std::string_view vector_isa();

/// One phrase for logs and `clef info`: e.g. "AMX int8 tiles + AVX-512 VNNI" or "AVX-512 VNNI,
/// repacked weights". `repacked` is the backbone's weight_repacking (the extra buffer types, AMX
/// among them, are used only with it).
std::string describe_cpu_path(bool repacked);

}  // namespace clef::device
