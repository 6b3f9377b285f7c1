#pragma once
// The machine's physical memory.

#include <cstdint>

namespace clef::util {

/// The machine's physical memory (sysconf _SC_PHYS_PAGES x _SC_PAGE_SIZE), bytes; 8 GiB when it
/// cannot be read.
std::uint64_t physical_memory_bytes();

}  // namespace clef::util
