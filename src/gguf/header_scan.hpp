#pragma once
// A GGUF header checked by clef before ggml sees it: how many leading bytes hold the header
// (magic, version, key/values, tensor infos, padding to the data alignment), with every type field
// checked. `clef pull` uses it to read a remote file's metadata with one ranged request before
// downloading gigabytes; GgufFile runs it before ggml's gguf_init_from_file, which loads an
// out-of-range type field into an enum (undefined behaviour) before it checks it, so a crafted
// file clef did not make never reaches ggml. Format: ggml docs/gguf.md (v2/v3: 64-bit counts and
// lengths).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

namespace clef::gguf {

/// The header size of the GGUF starting with `prefix`, or nullopt when `prefix` is too short to
/// tell (ask for more bytes). Throws clef::Error (model_error) when the bytes are not a GGUF v2/v3
/// header: wrong magic or version, a key/value type or array element type outside GGUF's value
/// types (or an array of arrays), a tensor with more than 4 dimensions or a ggml type outside
/// ggml_type, implausible counts or lengths, an alignment that is not a power of 2.
std::optional<std::uint64_t> header_size(std::span<const std::byte> prefix);

/// header_size() over the file at `path`, reading a growing prefix (1 MiB, then 8x) until the
/// header is complete. Throws clef::Error (model_error) naming the file for what header_size
/// refuses and for a file that ends inside its header.
std::uint64_t check_header(const std::filesystem::path& path);

}  // namespace clef::gguf
