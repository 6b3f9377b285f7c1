#pragma once
// Byte counts as people read them.

#include <cstdint>
#include <string>

namespace clef::util {

/// `bytes` in binary units: "6.52 GiB", "918.25 MiB", "1.20 KiB", "12 B".
std::string human_bytes(std::uint64_t bytes);

}  // namespace clef::util
