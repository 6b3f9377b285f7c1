// Image sources: data URIs are decoded, URLs are refused unless allowed, and an allowed URL whose
// host is (or resolves to) a loopback, private, link-local, unique-local or unspecified address is
// refused before any connection. No test here touches the network: every refused address is a
// literal, checked before connecting, and the resolver is only asked about literals.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "media/base64.hpp"
#include "media/decode.hpp"
#include "media/image_source.hpp"
#include "media/image_url.hpp"
#include "media/probe.hpp"
#include "support/status_of.hpp"
#include "support/test_files.hpp"
#include "util/error.hpp"
#include "vision/grid.hpp"

namespace clef::media {
namespace {

using clef::test::status_of;
std::string png_uri() {
  const auto bytes = test::read_bytes(test::data_path("oracle/coreai/images/gauge_300x200.png"));
  return "data:image/png;base64," + encode_base64(bytes);
}

TEST(Base64, EncodeIsTheInverseOfDecode) {
  for (std::size_t n = 1; n < 8; ++n) {
    std::vector<std::uint8_t> bytes;
    for (std::size_t i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(251 * i + 7));
    EXPECT_EQ(decode_base64(encode_base64(bytes)), bytes) << n;
  }
  const std::string text = "hello";
  EXPECT_EQ(encode_base64({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}),
            "aGVsbG8=");
}

TEST(ImageSource, DataUrisDecodeAndOtherFormsAreRefused) {
  ImageSourcePolicy policy;
  const RgbImage img = load_request_image(png_uri(), policy, "images.0");
  EXPECT_EQ(img.width, 300);
  EXPECT_EQ(img.height, 200);

  EXPECT_EQ(
      status_of([&] { load_request_image("data:image/png;base64,@@@@", policy, "images.0"); }),
      400);
  EXPECT_EQ(
      status_of([&] { load_request_image("data:image/gif;base64,R0lGODlh", policy, "images.0"); }),
      415);
  EXPECT_EQ(status_of([&] { load_request_image("/etc/passwd", policy, "images.0"); }), 400);
  EXPECT_EQ(status_of([&] { load_request_image("file:///etc/passwd", policy, "images.0"); }), 400);
  EXPECT_EQ(status_of([&] { load_request_image("ftp://example.com/a.png", policy, "images.0"); }),
            400);
  try {
    load_request_image("https://example.com/a.png", policy, "images.1");
    FAIL() << "URLs must be off by default";
  } catch (const Error& e) {
    // 422 image_urls_disabled: well formed; a server with URLs enabled could take it.
    EXPECT_EQ(e.status(), 422);
    EXPECT_EQ(e.code(), "image_urls_disabled");
    EXPECT_EQ(e.param(), "images.1");
    EXPECT_NE(std::string(e.what()).find("--allow-image-urls"), std::string::npos) << e.what();
  }
}

TEST(ImageUrl, ParsesHttpUrls) {
  const HttpUrl a = parse_http_url("https://Example.com/img/a.png?x=1#frag");
  EXPECT_EQ(a.scheme, "https");
  EXPECT_EQ(a.host, "example.com");
  EXPECT_EQ(a.port, 443);
  EXPECT_EQ(a.target, "/img/a.png?x=1");
  const HttpUrl b = parse_http_url("http://[::1]:8080");
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.port, 8080);
  EXPECT_EQ(b.target, "/");
  for (const char* bad : {"http://", "http://user:pw@example.com/", "http://example.com:0/",
                          "http://example.com:99999/", "http://exa mple.com/", "gopher://x/",
                          "http://[::1/", "example.com/a.png"}) {
    EXPECT_EQ(status_of([&] { parse_http_url(bad, "images.0"); }), 400) << bad;
  }
}

TEST(ImageUrl, ClassifiesForbiddenAddresses) {
  for (const char* ip : {"127.0.0.1",
                         "127.8.9.10",
                         "10.0.0.1",
                         "10.255.255.255",
                         "172.16.0.1",
                         "172.31.255.254",
                         "192.168.1.1",
                         "169.254.169.254",
                         "169.254.0.1",
                         "0.0.0.0",
                         "0.1.2.3",
                         "100.64.0.1",
                         "224.0.0.1",
                         "255.255.255.255",
                         "::",
                         "::1",
                         "fe80::1",
                         "fc00::1",
                         "fd12:3456::1",
                         "::ffff:127.0.0.1",
                         "::ffff:10.1.2.3",
                         "::ffff:169.254.169.254",
                         "64:ff9b::a9fe:a9fe",
                         "2002:7f00:1::",
                         "ff02::1"}) {
    EXPECT_TRUE(forbidden_address_reason(ip).has_value()) << ip;
  }
  for (const char* ip : {"8.8.8.8", "1.1.1.1", "172.32.0.1", "172.15.255.255", "192.169.0.1",
                         "169.255.0.1", "2606:4700:4700::1111", "2001:4860:4860::8888"}) {
    EXPECT_FALSE(forbidden_address_reason(ip).has_value()) << ip;
  }
  EXPECT_TRUE(forbidden_address_reason("not-an-ip").has_value());
  // The test-only switch opens loopback and nothing else.
  EXPECT_FALSE(forbidden_address_reason("127.0.0.1", true).has_value());
  EXPECT_FALSE(forbidden_address_reason("::1", true).has_value());
  EXPECT_TRUE(forbidden_address_reason("10.0.0.1", true).has_value());
  EXPECT_TRUE(forbidden_address_reason("169.254.169.254", true).has_value());
}

TEST(ImageUrl, ForbiddenHostsAreRefusedBeforeConnecting) {
  ImageSourcePolicy policy;
  policy.allow_urls = true;
  policy.url.timeout = std::chrono::milliseconds(2000);
  for (const char* url : {"http://127.0.0.1/a.png", "http://169.254.169.254/latest/meta-data/",
                          "http://10.0.0.1:8080/a.png", "http://[::1]/a.png",
                          "https://[fd00::1]/a.png", "http://0.0.0.0/", "http://192.168.0.1/",
                          "http://[::ffff:127.0.0.1]/", "http://localhost/a.png"}) {
    try {
      load_request_image(url, policy, "images.2");
      ADD_FAILURE() << "fetched " << url;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), 400) << url;
      EXPECT_EQ(e.param(), "images.2");
      EXPECT_NE(std::string(e.what()).find("does not fetch"), std::string::npos)
          << url << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace clef::media

namespace clef::media {
namespace {

/// Every decodable test image: the header probe gives the decoded size, up to the transpose of
/// EXIF orientations 5..8; the decompression bombs are sized from the header without decoding.
TEST(ProbeStoredSize, MatchesTheDecodedSizeUpToOrientation) {
  std::ifstream cases(test::data_path("vision/decode_cases.txt"));
  std::string line;
  int checked = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("refuse", 0) == 0) continue;
    std::istringstream in(line);
    std::string name, file, rgb;
    int width = 0, height = 0;
    in >> name >> file >> rgb >> width >> height;
    SCOPED_TRACE(name);
    const auto bytes = test::read_bytes(test::data_path("vision/" + file));
    const auto size = probe_stored_size(bytes);
    ASSERT_TRUE(size.has_value());
    const bool transposed = size->width != width;
    EXPECT_EQ(transposed ? size->height : size->width, width);
    EXPECT_EQ(transposed ? size->width : size->height, height);
    // The token count does not depend on the orientation.
    EXPECT_EQ(vision::image_grid_for_input(size->height, size->width).n_image_tokens(),
              vision::image_grid_for_input(height, width).n_image_tokens());
    ++checked;
  }
  EXPECT_EQ(checked, 33);
  for (const char* bomb : {"vision/decode/refuse_bomb.png", "vision/decode/refuse_bomb.jpg"}) {
    const auto size = probe_stored_size(test::read_bytes(test::data_path(bomb)));
    ASSERT_TRUE(size.has_value()) << bomb;
    EXPECT_GT(std::uint64_t(size->width) * size->height, DecodeLimits{}.max_pixels) << bomb;
  }
  EXPECT_FALSE(probe_stored_size(test::read_bytes(test::data_path("vision/decode/refuse_gif.gif")))
                   .has_value());
  EXPECT_FALSE(probe_stored_size(std::vector<std::uint8_t>{0xFF, 0xD8, 0xFF}).has_value());
  EXPECT_FALSE(probe_stored_size(std::vector<std::uint8_t>{}).has_value());
}

/// Issue 13 finding 3: "FF 00" plus a length right after the start-of-image marker, then a comment
/// holding a fake 4000x4000 frame header. clef's own marker walk once took FF 00 for a segment,
/// jumped into the comment and read the fake size (libjpeg skips FF 00 as stuffing and decodes
/// the real frame), so the budget was checked on the wrong size and the decision failed with a
/// 500. The probe now asks libjpeg's header reader, which finds the real frame.
TEST(ProbeStoredSize, StuffedZeroAfterSoiDoesNotLeadToAFakeFrameHeader) {
  const auto real = test::read_bytes(test::data_path("vision/decode/jpeg_420.jpg"));
  ASSERT_GT(real.size(), 2u);
  const std::vector<std::uint8_t> fake_sof = {0xFF, 0xC0, 0x00, 0x11, 0x08, 0x0F, 0xA0,
                                              0x0F, 0xA0, 0x03, 0x01, 0x22, 0x00, 0x02,
                                              0x11, 0x01, 0x03, 0x11, 0x01};
  std::vector<std::uint8_t> crafted = {
      0xFF, 0xD8, 0xFF, 0x00,
      0x00, 0x06,                                                         // SOI, FF 00 + "length"
      0xFF, 0xFE, 0x00, static_cast<std::uint8_t>(2 + fake_sof.size())};  // COM
  crafted.insert(crafted.end(), fake_sof.begin(), fake_sof.end());
  crafted.insert(crafted.end(), real.begin() + 2, real.end());  // the real file after its SOI

  const auto probed = probe_stored_size(crafted);
  ASSERT_TRUE(probed.has_value());
  const RgbImage decoded = decode_image(crafted, DecodeLimits{}, "images.0");
  EXPECT_EQ(probed->width, decoded.width);
  EXPECT_EQ(probed->height, decoded.height);
  EXPECT_NE(probed->width, 4000);
  const auto original = probe_stored_size(real);
  ASSERT_TRUE(original.has_value());
  EXPECT_EQ(probed->width, original->width);
  EXPECT_EQ(probed->height, original->height);
}

}  // namespace
}  // namespace clef::media
