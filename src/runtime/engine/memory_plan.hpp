#pragma once
// The memory plan an engine is built on: what the backbone (llama.cpp's own accounting of a
// no_alloc load), the joint schema head, the vision tower and the decisions' hidden states take,
// set against what the machine (and the GPU) has; the backbone layers a GPU holds when
// gpu_layers is auto; and what is left for the state cache and for one image's vision compute.
// A configuration that cannot fit is refused here, at start, with the arithmetic.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backbone/memory_measure.hpp"
#include "util/physical_memory.hpp"

namespace clef::runtime {

/// What an engine takes besides the state cache and the vision tower's compute.
struct MemoryNeeds {
  backbone::BackboneMemory backbone;      ///< at the gpu_layers planned
  std::uint64_t head = 0;                 ///< the joint schema head's f32 weights
  std::uint64_t tower = 0;                ///< the mmproj's weights (0: no vision tower)
  std::uint64_t hidden_rows = 0;          ///< parallel x context x n_embd f32: the hidden states
  bool head_and_tower_on_device = false;  ///< they follow the backbone to its GPU
};

/// What the plan may spend.
struct MemoryBudget {
  util::HostMemory host;          ///< this process's share of the machine
  std::uint64_t physical = 0;     ///< the machine's physical memory
  std::string device;             ///< the GPU's name; empty on the CPU
  std::uint64_t device_free = 0;  ///< bytes free on the GPU now
};

/// What the user asked for (EngineConfig): -1 / 0 mean "plan it".
struct MemoryRequest {
  std::int64_t state_cache_mb = -1;     ///< -1 auto, 0 off, else MiB
  std::uint64_t max_vision_memory = 0;  ///< 0 auto, else bytes
  int parallel = 1;
  int context_size = 0;
};

/// The outcome.
struct MemoryPlan {
  int gpu_layers = 0;   ///< backbone layers on the GPU (-1 all; 0 on the CPU)
  bool fitted = false;  ///< gpu_layers was auto: fitted to the GPU's free memory (0: the CPU)
  std::uint64_t state_cache = 0;    ///< bytes the state cache may hold
  std::uint64_t vision_memory = 0;  ///< bytes one image's vision compute may take (0: no tower)
  std::vector<std::string> lines;   ///< the arithmetic, for the log and for refusals
  /// The lines joined with newlines.
  std::string text() const;
};

/// Host memory kept for what is not measured: the tokenizer, lexical rows, request buffers,
/// HTTP connections (bytes).
inline constexpr std::uint64_t kHostReserve = std::uint64_t{512} << 20;
/// GPU memory kept free for the driver and other processes (bytes; llama.cpp's memory fit keeps
/// 1 GiB by default, common/common.h fit_params_target).
inline constexpr std::uint64_t kDeviceReserve = std::uint64_t{1024} << 20;
/// The most an automatic state cache takes (bytes).
inline constexpr std::uint64_t kMostAutoStateCache = std::uint64_t{4096} << 20;

/// Plans `needs` into `budget`: the host holds the backbone's host part, the head and tower
/// unless on the GPU, the hidden rows and kHostReserve; the GPU its part plus kDeviceReserve.
/// What the host has left goes to one image's vision compute (auto: half of it, at most a quarter
/// of physical memory; on a GPU what the GPU has left, same cap) and the state cache (auto: the
/// rest, at most kMostAutoStateCache). Throws clef::Error (invalid_request) with the arithmetic
/// when the fixed part does not fit the host ("context_size") or the GPU ("gpu_layers"), or an
/// explicit state_cache_mb / max_vision_memory is over what is left (naming that setting).
MemoryPlan plan_memory(const MemoryNeeds& needs, const MemoryBudget& budget,
                       const MemoryRequest& request);

/// The GPU part of `needs` with kDeviceReserve: what must fit `budget.device_free`.
std::uint64_t device_need(const MemoryNeeds& needs);

/// The most backbone layers (0..n_layer) whose device_need(needs_at(layers)) fits
/// `device_free`, by bisection (needs grow with the layers); -1 when every layer and the output
/// layer fit (needs_at(-1)). needs_at is called about log2(n_layer) + 1 times.
int fit_gpu_layers(int n_layer, std::uint64_t device_free,
                   const std::function<MemoryNeeds(int layers)>& needs_at);

}  // namespace clef::runtime
