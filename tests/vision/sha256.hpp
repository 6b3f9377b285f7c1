#pragma once
// SHA-256 (FIPS 180-4) for comparing byte buffers with the oracle's hashes in tests.

#include <cstddef>
#include <cstdint>
#include <string>

namespace clef::test {

/// Lower-case hex SHA-256 of `size` bytes at `data`.
std::string sha256_hex(const void* data, std::size_t size);

}  // namespace clef::test
