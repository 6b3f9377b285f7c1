#pragma once
// Engine parameters of the backbone, named as the self-hosted registry engine names them.

#include <cstdint>
#include <functional>
#include <string>

#include "device/cpu_path.hpp"

namespace clef::backbone {

/// The most records one backbone prefills together (BackboneParams::parallel).
inline constexpr int kMaxParallel = 64;
/// The most CPU threads (ggml's GGML_MAX_N_THREADS; a server asked for 100,000 died in libgomp).
inline constexpr int kMaxThreads = 512;

/// BackboneParams::gpu_layers: as many layers as the GPU has memory for (runtime::plan_memory).
inline constexpr int kAutoGpuLayers = -2;

/// Parameters for loading and running the backbone.
struct BackboneParams {
  /// Context size in tokens: the longest record (prefix + images + state + schema + suffix).
  /// Valid range 512..262144. Also the record encoder's max_length.
  int context_size = 16384;
  /// CPU threads for the prefill; 0 = the physical cores this process may run on
  /// (physical_cores()).
  int threads = 0;
  /// Layers offloaded to a GPU backend: kAutoGpuLayers (-2) what fits the GPU's free memory,
  /// decided by the engine's memory plan (a Backbone made without one offloads all), -1 all, 0
  /// none (CPU only).
  int gpu_layers = kAutoGpuLayers;
  /// Where the backbone (and with it the vision tower and the joint schema head) runs: "auto"
  /// (the first GPU of a CLEF_CUDA build when there is one), "cpu", or a device name such as
  /// "Vulkan0", "CUDA0" (device::resolve).
  std::string device = "auto";
  /// Prefill chunk (llama.cpp n_batch = n_ubatch) in tokens. Chunks always start at multiples of
  /// this size from token 0, so a record's hidden states depend only on the record itself.
  int chunk_tokens = 512;
  /// Flash attention in the backbone. Off by default: with it on, the CPU kernels give results
  /// that depend on the chunk layout (see docs/performance.md).
  bool flash_attention = false;
  /// Let llama.cpp repack quantized weights into CPU-specific interleaved layouts (its "extra
  /// buffer types": AMX tiles where cpu_amx allows, else the AVX2/AVX-512 interleaved kernels;
  /// Q4_K_M prefills ~1.4x faster). On by default, as in llama.cpp: the repacked GEMM's row
  /// blocks are kept aligned by the prefill layout (kBatchRowAlignment), so answers stay those of
  /// one pass. 0 keeps plain weights (and no AMX).
  bool weight_repacking = true;
  /// Intel AMX for the CPU's matrix products (device::use_cpu_amx): auto (where the CPU has it),
  /// on (required), off. One setting per process: ggml decides at the first model load.
  device::CpuAmx cpu_amx = device::CpuAmx::automatic;
  /// Records prefilled together (llama.cpp n_seq_max, one KV stream of `context_size` tokens and
  /// one recurrent state each): 1..64. 1 is one record at a time; more lets Backbone::step put
  /// several records in one llama_decode (continuous batching). Each sequence holds its own
  /// memory for a whole context (see Backbone::sequence_memory).
  int parallel = 1;
  /// Called while the weights load with progress in [0, 1]; return false to abort.
  std::function<bool(float)> on_progress;
};

/// Throws clef::Error (invalid_request) naming the parameter when a value is out of range.
void validate(const BackboneParams& params);

/// The physical cores among the CPUs this process may run on (sched_getaffinity, then each CPU's
/// package and core id from /sys/devices/system/cpu): SMT siblings count once, because the
/// prefill's matrix kernels gain nothing from a second thread on one core (llama.cpp's own tools
/// default to physical cores too). Without topology files: the allowed CPUs. At least 1.
int physical_cores();

/// The thread count `params.threads` means: itself when > 0, else physical_cores(). Used by the
/// backbone, the joint schema head and the vision tower alike.
int resolved_threads(const BackboneParams& params);

}  // namespace clef::backbone
