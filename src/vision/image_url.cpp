#include "vision/image_url.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <array>
#include <cctype>
#include <charconv>
#include <memory>

#include <httplib.h>

#include "util/error.hpp"
#include "vision/errors.hpp"

namespace clef::vision {
namespace {

using Clock = std::chrono::steady_clock;

Error url_error(const std::string& param, const std::string& message) {
  return invalid_request(param + ": " + message, param);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Why an IPv4 address (host byte order) may not be fetched.
std::optional<std::string> forbidden_v4(std::uint32_t a, bool allow_loopback) {
  struct Range {
    std::uint32_t net;
    int bits;
    const char* what;
  };
  static constexpr std::array<Range, 13> ranges = {{
      {0x00000000u, 8, "an unspecified (0.0.0.0/8) address"},
      {0x0A000000u, 8, "a private (10.0.0.0/8) address"},
      {0x64400000u, 10, "a shared (100.64.0.0/10) address"},
      {0x7F000000u, 8, "a loopback (127.0.0.0/8) address"},
      {0xA9FE0000u, 16, "a link-local (169.254.0.0/16, cloud metadata) address"},
      {0xAC100000u, 12, "a private (172.16.0.0/12) address"},
      {0xC0000000u, 24, "an IETF protocol (192.0.0.0/24) address"},
      {0xC0A80000u, 16, "a private (192.168.0.0/16) address"},
      {0xC6120000u, 15, "a benchmarking (198.18.0.0/15) address"},
      {0xE0000000u, 4, "a multicast (224.0.0.0/4) address"},
      {0xF0000000u, 4, "a reserved (240.0.0.0/4) address"},
      {0xFFFFFFFFu, 32, "the broadcast address"},
      {0xC0000200u, 24, "a documentation (192.0.2.0/24) address"},
  }};
  for (const Range& r : ranges) {
    const std::uint32_t mask = r.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - r.bits);
    if ((a & mask) == r.net) {
      if (allow_loopback && r.net == 0x7F000000u) return std::nullopt;
      return std::string(r.what);
    }
  }
  return std::nullopt;
}

std::uint32_t v4_at(const std::uint8_t* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
         std::uint32_t{b[3]};
}

std::optional<std::string> forbidden_v6(const std::array<std::uint8_t, 16>& b,
                                        bool allow_loopback) {
  auto zero = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      if (b[i] != 0) return false;
    }
    return true;
  };
  if (zero(0, 16)) return std::string("the unspecified address (::)");
  if (zero(0, 15) && b[15] == 1) {
    if (allow_loopback) return std::nullopt;
    return std::string("the loopback address (::1)");
  }
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d: the IPv4 address decides.
  if (zero(0, 10) && ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0))) {
    return forbidden_v4(v4_at(&b[12]), allow_loopback);
  }
  // NAT64 64:ff9b::/96 embeds an IPv4 address in the last 32 bits.
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12)) {
    return forbidden_v4(v4_at(&b[12]), allow_loopback);
  }
  // 6to4 2002::/16 embeds one in bits 16..47.
  if (b[0] == 0x20 && b[1] == 0x02) return forbidden_v4(v4_at(&b[2]), allow_loopback);
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return std::string("a link-local (fe80::/10) address");
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return std::string("a site-local (fec0::/10) address");
  if ((b[0] & 0xfe) == 0xfc) return std::string("a unique-local (fc00::/7) address");
  if (b[0] == 0xff) return std::string("a multicast (ff00::/8) address");
  return std::nullopt;
}

/// Numeric addresses of `host`, every one the resolver returns.
std::vector<std::string> resolve(const std::string& host, int port, const std::string& param) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw url_error(param, "host '" + host + "' does not resolve (" + gai_strerror(rc) + ")");
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(res, &freeaddrinfo);
  std::vector<std::string> out;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ai->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr, buf,
                sizeof buf);
    } else if (ai->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(ai->ai_addr)->sin6_addr, buf,
                sizeof buf);
    } else {
      continue;
    }
    out.emplace_back(buf);
  }
  if (out.empty()) throw url_error(param, "host '" + host + "' has no IPv4 or IPv6 address");
  return out;
}

std::string host_for_url(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

/// The absolute URL a Location header points to from `base`.
std::string resolve_location(const HttpUrl& base, const std::string& location) {
  const std::string l = lower(location.substr(0, 8));
  if (l.rfind("http://", 0) == 0 || l.rfind("https://", 0) == 0) return location;
  const std::string origin =
      base.scheme + "://" + host_for_url(base.host) + ":" + std::to_string(base.port);
  if (location.rfind("//", 0) == 0) return base.scheme + ":" + location;
  if (!location.empty() && location[0] == '/') return origin + location;
  const std::string dir = base.target.substr(0, base.target.rfind('/') + 1);
  return origin + (dir.empty() ? "/" : dir) + location;
}

}  // namespace

HttpUrl parse_http_url(std::string_view url, const std::string& param) {
  for (const char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      throw url_error(param, "URL contains a space or control character");
    }
  }
  HttpUrl out;
  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos) throw url_error(param, "not an http(s) URL");
  out.scheme = lower(url.substr(0, colon));
  if (out.scheme != "http" && out.scheme != "https") {
    throw url_error(param, "URL scheme '" + out.scheme + "' is not http or https");
  }
  std::string_view rest = url.substr(colon + 3);
  const std::size_t path_at = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path_at);
  std::string_view target = path_at == std::string_view::npos ? "" : rest.substr(path_at);
  const std::size_t hash = target.find('#');
  if (hash != std::string_view::npos) target = target.substr(0, hash);
  if (authority.find('@') != std::string_view::npos) {
    throw url_error(param, "URLs with user information are not fetched");
  }
  std::string_view port_text;
  if (!authority.empty() && authority[0] == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw url_error(param, "unterminated IPv6 address in URL");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') throw url_error(param, "malformed host in URL");
      port_text = after.substr(1);
    }
  } else {
    const std::size_t c = authority.rfind(':');
    out.host = std::string(authority.substr(0, c));
    if (c != std::string_view::npos) port_text = authority.substr(c + 1);
  }
  out.host = lower(out.host);
  if (out.host.empty()) throw url_error(param, "URL has no host");
  out.port = out.scheme == "https" ? 443 : 80;
  if (!port_text.empty()) {
    int p = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || p < 1 || p > 65535) {
      throw url_error(param, "URL has a bad port '" + std::string(port_text) + "'");
    }
    out.port = p;
  }
  if (target.empty() || target[0] == '?') out.target.push_back('/');
  out.target.insert(out.target.end(), target.begin(), target.end());
  return out;
}

std::optional<std::string> forbidden_address_reason(std::string_view ip, bool allow_loopback) {
  const std::string s(ip);
  in_addr v4{};
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1)
    return forbidden_v4(ntohl(v4.s_addr), allow_loopback);
  std::array<std::uint8_t, 16> v6{};
  if (inet_pton(AF_INET6, s.c_str(), v6.data()) == 1) return forbidden_v6(v6, allow_loopback);
  return "'" + s + "' is not an IP address";
}

std::vector<std::uint8_t> fetch_media_url(std::string_view url, const UrlFetchPolicy& policy,
                                          const std::string& param, const MediaKind& kind) {
  const std::string noun(kind.noun);
  const auto deadline = Clock::now() + policy.timeout;
  std::string current(url);
  for (int hop = 0; hop <= policy.max_redirects; ++hop) {
    const HttpUrl u = parse_http_url(current, param);
    // Every address is checked before any connection, and the connection goes to a checked one
    // (no second lookup that could answer differently).
    const std::vector<std::string> addresses = resolve(u.host, u.port, param);
    for (const std::string& a : addresses) {
      if (const auto why = forbidden_address_reason(a, policy.allow_loopback_for_tests)) {
        throw url_error(param, noun + " URL host '" + u.host + "' resolves to " + a + ", " + *why +
                                   "; clef does not fetch from such addresses");
      }
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw url_error(param, "fetching the " + noun + " URL timed out");

    httplib::Client cli(u.scheme + "://" + host_for_url(u.host) + ":" + std::to_string(u.port));
    cli.set_hostname_addr_map({{u.host, addresses.front()}});
    cli.set_follow_location(false);
    cli.set_keep_alive(false);
    cli.set_connection_timeout(left);
    cli.set_read_timeout(left);
    cli.set_write_timeout(left);
    if (u.scheme == "https") cli.enable_server_certificate_verification(true);

    std::vector<std::uint8_t> body;
    bool too_big = false;
    bool timed_out = false;
    int status = 0;
    const httplib::Headers headers = {{"Accept", std::string(kind.accept)}};
    auto res = cli.Get(
        u.target, headers,
        [&](const httplib::Response& r) {
          status = r.status;
          if (r.status != 200) return true;  // redirects and errors: no body needed
          if (r.has_header("Content-Length")) {
            const std::string len = r.get_header_value("Content-Length");
            std::uint64_t n = 0;
            const auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), n);
            if (ec == std::errc() && n > policy.max_bytes) {
              too_big = true;
              return false;
            }
          }
          return true;
        },
        [&](const char* data, std::size_t n) {
          if (status != 200) return true;
          if (Clock::now() > deadline) {
            timed_out = true;
            return false;
          }
          if (body.size() + n > policy.max_bytes) {
            too_big = true;
            return false;
          }
          body.insert(body.end(), data, data + n);
          return true;
        });
    if (too_big) {
      throw Error(ErrorKind::payload_too_large, std::string(kind.too_large_code),
                  param + ": the " + noun + " at the URL is larger than " +
                      std::to_string(policy.max_bytes) + " bytes",
                  param);
    }
    if (timed_out) throw url_error(param, "fetching the " + noun + " URL timed out");
    if (!res) {
      throw url_error(
          param, "could not fetch the " + noun + " URL (" + httplib::to_string(res.error()) + ")");
    }
    if (res->status >= 300 && res->status < 400 && res->has_header("Location")) {
      current = resolve_location(u, res->get_header_value("Location"));
      continue;
    }
    if (res->status != 200) {
      throw url_error(param, "the " + noun + " URL answered HTTP " + std::to_string(res->status));
    }
    return body;
  }
  throw url_error(param, "the " + noun + " URL redirects more than " +
                             std::to_string(policy.max_redirects) + " times");
}

}  // namespace clef::vision
