#include "media/base64.hpp"

#include <array>
#include <string>

#include "media/errors.hpp"

namespace clef::media {
namespace {

constexpr std::array<std::int8_t, 256> make_table() {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < alphabet.size(); ++i) {
    t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  }
  return t;
}
constexpr auto kTable = make_table();

std::size_t padding_of(std::string_view text) noexcept {
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
  return pad;
}

}  // namespace

std::size_t base64_decoded_size(std::string_view text) noexcept {
  if (text.size() % 4 != 0) return 0;
  return text.size() / 4 * 3 - padding_of(text);
}

std::vector<std::uint8_t> decode_base64(std::string_view text) {
  if (text.empty()) throw media::kImageMedia.invalid("base64 data is empty");
  if (text.size() % 4 != 0) {
    throw media::kImageMedia.invalid("base64 length " + std::to_string(text.size()) +
                                     " is not a multiple of 4");
  }
  const std::size_t pad = padding_of(text);
  const std::size_t body = text.size() - pad;
  std::vector<std::uint8_t> out;
  out.reserve(base64_decoded_size(text));
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < body; ++i) {
    const std::int8_t v = kTable[static_cast<unsigned char>(text[i])];
    if (v < 0) {
      throw media::kImageMedia.invalid("base64 has an invalid character at offset " +
                                       std::to_string(i));
    }
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xFF));
    }
  }
  // What is left are the unused low bits of the last group (2 bits with "==", 4 with "=").
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
    throw media::kImageMedia.invalid("base64 has non-zero padding bits in its last group");
  }
  return out;
}

std::string encode_base64(std::span<const std::uint8_t> bytes) {
  static constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) |
                            std::uint32_t{bytes[i + 2]};
    for (int k = 3; k >= 0; --k) out.push_back(alphabet[(v >> (6 * k)) & 63]);
  }
  const std::size_t left = bytes.size() - i;
  if (left > 0) {
    std::uint32_t v = std::uint32_t{bytes[i]} << 16;
    if (left == 2) v |= std::uint32_t{bytes[i + 1]} << 8;
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(left == 2 ? alphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace clef::media
