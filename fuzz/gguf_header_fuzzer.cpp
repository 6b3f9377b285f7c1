// libFuzzer target: a GGUF header as clef reads it before ggml sees it (gguf::header_size: every
// type field, count and length checked; `clef pull` runs it on remote headers, GgufFile on local
// files). Any input must give a size, ask for more bytes (nullopt) or be refused with
// clef::Error; a size covers at least the fixed 24-byte start, and the answer for a prefix never
// contradicts the answer for the whole input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>

#include "gguf/header_scan.hpp"
#include "util/error.hpp"

namespace {

/// The scanner's answer: a size, "need more" (nullopt), or refused (-1).
std::optional<std::int64_t> answer(std::span<const std::byte> bytes) {
  try {
    const auto size = clef::gguf::header_size(bytes);
    if (!size) return std::nullopt;
    return static_cast<std::int64_t>(*size);
  } catch (const clef::Error&) {
    return -1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  const auto whole = answer(bytes);
  if (whole && *whole >= 0 && *whole < 24) std::abort();  // magic, version, two counts
  // A prefix that already decides (a size or a refusal) decides the same for the whole input.
  const auto half = answer(bytes.first(size / 2));
  if (half && whole && *half != *whole) std::abort();
  if (half && !whole) std::abort();
  return 0;
}
