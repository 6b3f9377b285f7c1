// libFuzzer target: an `images` entry as a data URI - the URI grammar, the media type and strict
// base64 (clef's own decoder). Any input must parse or be refused with clef::Error; what parses
// re-encodes to the same base64 payload (the decoder accepts exactly one spelling of each byte
// string) and stays within the encoded-size limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "media/base64.hpp"
#include "media/data_uri.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  clef::media::DecodeLimits limits;
  limits.max_encoded_bytes = 1 << 16;
  try {
    const clef::media::DataUri uri = clef::media::parse_data_uri(text, limits, "images.0");
    if (uri.bytes.size() > limits.max_encoded_bytes) std::abort();
  } catch (const clef::Error&) {
  }
  try {
    const auto decoded = clef::media::decode_base64(text);
    if (decoded.size() != clef::media::base64_decoded_size(text)) std::abort();
    if (clef::media::encode_base64(decoded) != text) std::abort();
  } catch (const clef::Error&) {
  }
  return 0;
}
