#pragma once
// The machine's physical memory, and what of it this process may plan on.

#include <cstdint>
#include <string>

namespace clef::util {

/// The machine's physical memory (sysconf _SC_PHYS_PAGES x _SC_PAGE_SIZE), bytes; 8 GiB when it
/// cannot be read.
std::uint64_t physical_memory_bytes();

/// Memory a process may plan on, bytes, and where the figure comes from.
struct HostMemory {
  std::uint64_t bytes = 0;
  std::string source;  ///< e.g. "available (MemAvailable)", "the cgroup's memory limit"
};

/// What this process may use now: the least of /proc/meminfo's MemAvailable (free memory plus
/// what the kernel can reclaim, such as clean file pages) and the memory limit of the process's
/// cgroup (v2 memory.max, v1 memory.limit_in_bytes) where one is set. Physical memory when
/// neither can be read.
HostMemory available_host_memory();

/// This process's resident memory now (VmRSS of /proc/self/status), bytes; 0 when unreadable.
std::uint64_t resident_bytes();

/// This process's peak resident memory (VmHWM of /proc/self/status), bytes; 0 when unreadable.
std::uint64_t peak_resident_bytes();

/// Starts peak_resident_bytes() again from the present resident memory (writes "5" to
/// /proc/self/clear_refs): to measure one phase of a run. False when the kernel refuses.
bool reset_peak_resident();

}  // namespace clef::util
