// Decoding equals what the reference gets from Pillow (open -> exif_transpose -> convert("RGB"))
// on every decoder path: PNG palette / grey / grey+alpha / RGBA / 1-2-4-16-bit / tRNS / eXIf,
// JPEG 4:2:0 / 4:4:4 / progressive / grey / EXIF orientations 1-8, WebP lossy / lossless /
// alpha / EXIF. Expected bytes come from scripts/gen_vision_expected.py (Debian's Pillow).
// Also: refusals (CMYK, GIF, animated WebP, truncated, decompression bombs), limits, data URIs
// and strict base64.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "media/base64.hpp"
#include "media/data_uri.hpp"
#include "media/decode.hpp"
#include "support/test_files.hpp"
#include "util/error.hpp"

namespace clef::media {
namespace {

using test::data_path;
using test::read_bytes;

struct DecodeCase {
  std::string name, file, expected;
  int width = 0, height = 0;
  int status = 0;  // refusals: expected HTTP status
};

std::vector<DecodeCase> load_cases(bool refusals) {
  std::ifstream f(data_path("vision/decode_cases.txt"));
  std::vector<DecodeCase> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    DecodeCase c;
    if (line.rfind("refuse ", 0) == 0) {
      std::string tag;
      in >> tag >> c.name >> c.file >> c.status;
      if (refusals) out.push_back(c);
    } else {
      in >> c.name >> c.file >> c.expected >> c.width >> c.height;
      if (!refusals) out.push_back(c);
    }
  }
  return out;
}

std::string encode_base64(const std::vector<std::uint8_t>& b) {
  static constexpr char kA[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < b.size(); i += 3) {
    const unsigned v = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2];
    out += {kA[v >> 18], kA[(v >> 12) & 63], kA[(v >> 6) & 63], kA[v & 63]};
  }
  if (i + 1 == b.size()) {
    const unsigned v = b[i] << 16;
    out += {kA[v >> 18], kA[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == b.size()) {
    const unsigned v = (b[i] << 16) | (b[i + 1] << 8);
    out += {kA[v >> 18], kA[(v >> 12) & 63], kA[(v >> 6) & 63], '='};
  }
  return out;
}

int status_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.status();
  }
  return 200;
}

TEST(Decode, EveryPathEqualsPillowRgb) {
  const auto cases = load_cases(false);
  ASSERT_GE(cases.size(), 30u);
  for (const DecodeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const RgbImage img = decode_image(read_bytes(data_path("vision/" + c.file)));
    EXPECT_EQ(img.width, c.width);
    EXPECT_EQ(img.height, c.height);
    const auto want = read_bytes(data_path("vision/" + c.expected));
    ASSERT_EQ(img.rgb.size(), want.size());
    std::size_t diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) diff += img.rgb[i] != want[i];
    EXPECT_EQ(diff, 0u) << "bytes that differ from Pillow's RGB";
  }
}

TEST(Decode, ExifOrientationTurnsTheImage) {
  // The generator's picture has a red top-left pixel; orientation 6 (rotate 90 clockwise) moves
  // it to the top-right and swaps width and height.
  const RgbImage up = decode_image(read_bytes(data_path("vision/decode/jpeg_exif_orient1.jpg")));
  const RgbImage turned =
      decode_image(read_bytes(data_path("vision/decode/jpeg_exif_orient6.jpg")));
  EXPECT_EQ(turned.width, up.height);
  EXPECT_EQ(turned.height, up.width);
  const RgbImage png = decode_image(read_bytes(data_path("vision/decode/png_exif_rot6.png")));
  EXPECT_EQ(png.width, 17);
  EXPECT_EQ(png.height, 23);
  EXPECT_EQ(png.pixel(16, 0)[0], 255);
  EXPECT_EQ(png.pixel(16, 0)[1], 0);
}

TEST(Decode, RefusalsHaveTheirStatus) {
  const auto cases = load_cases(true);
  ASSERT_GE(cases.size(), 7u);
  for (const DecodeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto bytes = read_bytes(data_path("vision/" + c.file));
    try {
      decode_image(bytes, {}, "images.0");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), c.status) << e.what();
      EXPECT_EQ(e.param(), "images.0");
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
}

TEST(Decode, CmykMessageSaysCmyk) {
  try {
    decode_image(read_bytes(data_path("vision/decode/refuse_cmyk.jpg")));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CMYK"), std::string::npos);
  }
}

TEST(Decode, LimitsAreCheckedBeforeDecoding) {
  const auto png = read_bytes(data_path("vision/decode/png_rgb8.png"));  // 23 x 17
  DecodeLimits tight;
  tight.max_pixels = 23 * 17 - 1;
  EXPECT_EQ(status_of([&] { decode_image(png, tight); }), 413);
  tight.max_pixels = 23 * 17;
  EXPECT_EQ(status_of([&] { decode_image(png, tight); }), 200);
  DecodeLimits small_bytes;
  small_bytes.max_encoded_bytes = png.size() - 1;
  EXPECT_EQ(status_of([&] { decode_image(png, small_bytes); }), 413);
  for (const char* f : {"vision/decode/jpeg_420.jpg", "vision/decode/webp_lossy.webp"}) {
    DecodeLimits l;
    l.max_pixels = 100;
    EXPECT_EQ(status_of([&] { decode_image(read_bytes(data_path(f)), l); }), 413) << f;
  }
}

TEST(Decode, GarbageAndEmptyAre400) {
  const std::vector<std::uint8_t> junk = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_EQ(status_of([&] { decode_image(junk); }), 400);
  EXPECT_EQ(status_of([&] { decode_image(std::vector<std::uint8_t>{}); }), 400);
  auto png = read_bytes(data_path("vision/decode/png_rgb8.png"));
  png[40] ^= 0xFF;  // inside IDAT: CRC or zlib error
  EXPECT_EQ(status_of([&] { decode_image(png); }), 400);
}

TEST(DataUri, DecodesTheSameAsTheFile) {
  const auto bytes = read_bytes(data_path("vision/decode/png_palette8.png"));
  const RgbImage direct = decode_image(bytes);
  const RgbImage via_uri = decode_data_uri("data:image/png;base64," + encode_base64(bytes));
  EXPECT_EQ(direct.rgb, via_uri.rgb);
  // Media type is case-insensitive; the payload is sniffed, as Pillow ignores the declared type.
  const auto jpg = read_bytes(data_path("vision/decode/jpeg_420.jpg"));
  EXPECT_EQ(decode_data_uri("DATA:Image/JPEG;BASE64," + encode_base64(jpg)).width, 23);
  EXPECT_EQ(parse_data_uri("data:image/webp;base64,AAAA").media_type, "image/webp");
}

TEST(DataUri, RefusesOtherMediaTypesAndForms) {
  EXPECT_EQ(status_of([] { parse_data_uri("data:image/gif;base64,R0lGODlh"); }), 415);
  EXPECT_EQ(status_of([] { parse_data_uri("data:text/plain;base64,AAAA"); }), 415);
  EXPECT_EQ(status_of([] { parse_data_uri("data:image/svg+xml;base64,AAAA"); }), 415);
  EXPECT_EQ(status_of([] { parse_data_uri("data:image/png,rawbytes"); }), 400);
  EXPECT_EQ(status_of([] { parse_data_uri("https://example.invalid/a.png"); }), 400);
  EXPECT_EQ(status_of([] { parse_data_uri("data:image/png;base64"); }), 400);
  try {
    parse_data_uri("data:image/png;base64,@@@@", {}, "images.2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "images.2");
  }
}

TEST(DataUri, SizeLimitBeforeDecoding) {
  DecodeLimits l;
  l.max_encoded_bytes = 6;
  EXPECT_EQ(status_of([&] { parse_data_uri("data:image/png;base64,AAAAAAAA", l); }), 200);
  EXPECT_EQ(status_of([&] { parse_data_uri("data:image/png;base64,AAAAAAAAAAAA", l); }), 413);
  // Even a payload that is not valid base64 is refused for its size first.
  EXPECT_EQ(status_of([&] { parse_data_uri("data:image/png;base64,!!!!!!!!!!!!", l); }), 413);
}

TEST(Base64, StrictDecoding) {
  EXPECT_EQ(decode_base64("TWFu"), (std::vector<std::uint8_t>{'M', 'a', 'n'}));
  EXPECT_EQ(decode_base64("TWE="), (std::vector<std::uint8_t>{'M', 'a'}));
  EXPECT_EQ(decode_base64("TQ=="), (std::vector<std::uint8_t>{'M'}));
  EXPECT_EQ(decode_base64("+/+/"), (std::vector<std::uint8_t>{0xfb, 0xff, 0xbf}));
  for (const char* bad : {"", "TWF", "TWFuA", "TW=u", "T===", "TWE", "TW\nFu", "TWF u", "TWF-",
                          "TWF_", "TQ=a", "TR==", "TWF=="}) {
    EXPECT_EQ(status_of([&] { decode_base64(bad); }), 400) << '"' << bad << '"';
  }
  EXPECT_EQ(base64_decoded_size("TWFuTQ=="), 4u);
}

TEST(Decode, DamagedFilesAreRefusedNotCrashed) {
  // Random byte damage and truncation of every good file: decoding either succeeds or throws
  // clef::Error, never anything else.
  std::mt19937 rng(99);
  int refused = 0;
  for (const DecodeCase& c : load_cases(false)) {
    const auto good = read_bytes(data_path("vision/" + c.file));
    for (int round = 0; round < 60; ++round) {
      auto bytes = good;
      if (round % 3 == 0) {
        bytes.resize(std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng));
      } else {
        const int hits = 1 + round % 5;
        for (int h = 0; h < hits; ++h) {
          const std::size_t at =
              std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng);
          bytes[at] = static_cast<std::uint8_t>(rng());
        }
      }
      try {
        const RgbImage img = decode_image(bytes);
        EXPECT_EQ(img.rgb.size(), static_cast<std::size_t>(img.width) * img.height * 3);
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace clef::media
