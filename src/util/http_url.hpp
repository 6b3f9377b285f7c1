#pragma once
// http(s) URLs that clef connects to (a hub endpoint, `clef batch --endpoint`), checked before any
// HTTP client is made from them: a client built from a bad origin is unusable (a crash, found by a
// break test, with ports over 65535, user info, other schemes).

#include <string>
#include <string_view>

namespace clef::util {

struct HttpUrl {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< a name, an IPv4 address or a bracketed IPv6 address ("[::1]")
  int port = 0;        ///< 1..65535 (the scheme's default when the URL has none)
  std::string path;    ///< "" or "/..." (no query or fragment)
  /// scheme://host[:port] as written for an HTTP client.
  std::string origin() const;
};

/// Parses `url`. Throws clef::Error (invalid_request, naming `param`) unless it is
/// http(s)://host[:port][/path] with a port in 1..65535 and no user info, query or fragment.
HttpUrl parse_http_url(std::string_view url, const std::string& param);

}  // namespace clef::util
