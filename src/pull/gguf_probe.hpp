#pragma once
// How many leading bytes of a GGUF file hold its header (magic, version, key/values, tensor
// infos, padding to the data alignment), so `clef pull` can read a remote file's metadata with
// one ranged request before downloading gigabytes. Format: ggml docs/gguf.md (v2/v3: 64-bit
// counts and lengths).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace clef::pull {

/// The header size of the GGUF starting with `prefix`, or nullopt when `prefix` is too short to
/// tell (ask for more bytes). Throws clef::Error (model_error) when the bytes are not a GGUF v2/v3
/// header (wrong magic or version, unknown value type, implausible counts).
std::optional<std::uint64_t> gguf_header_size(std::span<const std::byte> prefix);

}  // namespace clef::pull
