// URLs clef connects to are checked before an HTTP client is made from them: a break test crashed
// `clef batch --endpoint` and `--hub-endpoint` with ports over 65535, port 0, letters as a port,
// user info and other schemes.
#include <gtest/gtest.h>

#include "util/error.hpp"
#include "util/http_url.hpp"

namespace clef::util {
namespace {

TEST(HttpUrl, AcceptsHttpAndHttpsWithPortsAndPaths) {
  const HttpUrl a = parse_http_url("http://127.0.0.1:8080", "endpoint");
  EXPECT_EQ(a.origin(), "http://127.0.0.1:8080");
  EXPECT_EQ(a.path, "");
  const HttpUrl b = parse_http_url("https://hub.example/mirror/hf", "endpoint");
  EXPECT_EQ(b.origin(), "https://hub.example:443");
  EXPECT_EQ(b.path, "/mirror/hf");
  const HttpUrl c = parse_http_url("http://[::1]:9000/v1/systemone", "endpoint");
  EXPECT_EQ(c.host, "[::1]");
  EXPECT_EQ(c.port, 9000);
  EXPECT_EQ(c.path, "/v1/systemone");
}

TEST(HttpUrl, RefusesWhatWouldMakeAnUnusableClient) {
  for (const char* bad :
       {"http://127.0.0.1:99999", "http://127.0.0.1:65536", "http://127.0.0.1:0",
        "http://127.0.0.1:abc", "http://user:pw@127.0.0.1:80", "ftp://x", "127.0.0.1:80", "http://",
        "http://[::1", "http://a b", "http://x/?q=1", "http://x/#f"}) {
    try {
      parse_http_url(bad, "endpoint");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.param(), "endpoint") << bad;
    }
  }
}

}  // namespace
}  // namespace clef::util
