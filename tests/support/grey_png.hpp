#pragma once
// A grey (all-zero) 8-bit greyscale PNG of any size, made in memory with zlib: tiny on disk
// however large its pixel count, the shape of an image bomb (issue 13: a 15.6 KB 4000x4000 PNG).

#include <zlib.h>

#include <cstdint>
#include <string>

namespace clef::test {

/// The PNG file bytes of a `width` x `height` all-zero greyscale image (filter 0 on every row).
inline std::string grey_png(std::uint32_t width, std::uint32_t height) {
  const auto be32 = [](std::uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  const auto chunk = [&](const std::string& type, const std::string& data) {
    const std::string body = type + data;
    const auto crc = static_cast<std::uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
    return be32(static_cast<std::uint32_t>(data.size())) + body + be32(crc);
  };
  const std::string raw(static_cast<std::size_t>(width + 1) * height, '\0');
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string idat(size, '\0');
  compress2(reinterpret_cast<Bytef*>(idat.data()), &size,
            reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 9);
  idat.resize(size);
  const std::string ihdr = be32(width) + be32(height) + std::string{8, 0, 0, 0, 0};
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", idat) +
         chunk("IEND", "");
}

}  // namespace clef::test
