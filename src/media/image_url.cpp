#include "media/image_url.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <array>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "media/errors.hpp"
#include "util/error.hpp"

namespace clef::media {
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

/// One block of special-purpose addresses: `bits` leading bits of `prefix` (network byte order).
struct Reserved {
  std::array<std::uint8_t, 16> prefix;
  int bits;
  const char* what;
  /// For IPv6 forms that carry an IPv4 address: the byte it starts at (the IPv4 address
  /// decides); -1 when the block itself is refused.
  int embedded_v4 = -1;
};

/// IANA's IPv4 Special-Purpose Address Registry (RFC 6890 and its updates): every block that is
/// not a globally reachable unicast host, the documentation ranges included. One list: an address
/// in any of them is refused. The first 4 bytes of `prefix` are the IPv4 network.
constexpr std::array<Reserved, 20> kReservedV4 = {{
    {{0, 0, 0, 0}, 8, "an unspecified (0.0.0.0/8) address"},
    {{10, 0, 0, 0}, 8, "a private (10.0.0.0/8) address"},
    {{100, 64, 0, 0}, 10, "a shared (100.64.0.0/10) address"},
    {{127, 0, 0, 0}, 8, "a loopback (127.0.0.0/8) address"},
    {{169, 254, 0, 0}, 16, "a link-local (169.254.0.0/16, cloud metadata) address"},
    {{172, 16, 0, 0}, 12, "a private (172.16.0.0/12) address"},
    {{192, 0, 0, 0}, 24, "an IETF protocol (192.0.0.0/24) address"},
    {{192, 0, 2, 0}, 24, "a documentation (192.0.2.0/24, TEST-NET-1) address"},
    {{192, 31, 196, 0}, 24, "an AS112 (192.31.196.0/24) address"},
    {{192, 52, 193, 0}, 24, "an AMT (192.52.193.0/24) address"},
    {{192, 88, 99, 0}, 24, "a 6to4 relay anycast (192.88.99.0/24) address"},
    {{192, 168, 0, 0}, 16, "a private (192.168.0.0/16) address"},
    {{192, 175, 48, 0}, 24, "an AS112 (192.175.48.0/24) address"},
    // Not special-purpose, but every Azure VM's metadata and DHCP service (WireServer).
    {{168, 63, 129, 16}, 32, "a cloud metadata (168.63.129.16, Azure WireServer) address"},
    {{198, 18, 0, 0}, 15, "a benchmarking (198.18.0.0/15) address"},
    {{198, 51, 100, 0}, 24, "a documentation (198.51.100.0/24, TEST-NET-2) address"},
    {{203, 0, 113, 0}, 24, "a documentation (203.0.113.0/24, TEST-NET-3) address"},
    {{224, 0, 0, 0}, 4, "a multicast (224.0.0.0/4) address"},
    {{240, 0, 0, 0}, 4, "a reserved (240.0.0.0/4) address"},
    {{255, 255, 255, 255}, 32, "the broadcast address"},
}};

/// IANA's IPv6 Special-Purpose Address Registry, and the blocks outside 2000::/3 that are not
/// unicast hosts. Forms that embed an IPv4 address are decided by that address (kReservedV4).
constexpr std::array<Reserved, 17> kReservedV6 = {{
    {{}, 128, "the unspecified address (::)"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "the loopback address (::1)"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, "an IPv4-mapped address", 12},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0}, 96, "an IPv4-translated address", 12},
    {{}, 96, "a deprecated IPv4-compatible (::/96) address"},
    {{0, 0x64, 0xff, 0x9b}, 96, "a NAT64 address", 12},
    {{0, 0x64, 0xff, 0x9b, 0, 1}, 48, "a local-use NAT64 (64:ff9b:1::/48) address"},
    {{0x01}, 64, "a discard-only (100::/64) address"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, "a documentation (2001:db8::/32) address"},
    {{0x20, 0x01}, 23, "an IETF protocol (2001::/23, Teredo included) address"},
    {{0x20, 0x02}, 16, "a 6to4 address", 2},
    {{0x3f, 0xff}, 20, "a documentation (3fff::/20) address"},
    {{0x5f, 0x00}, 16, "a segment routing (5f00::/16) address"},
    {{0xfc}, 7, "a unique-local (fc00::/7) address"},
    {{0xfe, 0x80}, 10, "a link-local (fe80::/10) address"},
    {{0xfe, 0xc0}, 10, "a site-local (fec0::/10) address"},
    {{0xff}, 8, "a multicast (ff00::/8) address"},
}};

bool in_block(const std::uint8_t* address, const Reserved& r) {
  for (int bit = 0; bit < r.bits; ++bit) {
    const int byte = bit / 8;
    const auto mask = static_cast<std::uint8_t>(0x80u >> (bit % 8));
    if ((address[byte] & mask) != (r.prefix[static_cast<std::size_t>(byte)] & mask)) return false;
  }
  return true;
}

/// Why an IPv4 address (4 bytes, network order) may not be fetched.
std::optional<std::string> forbidden_v4(const std::uint8_t* a, bool allow_loopback) {
  for (const Reserved& r : kReservedV4) {
    if (!in_block(a, r)) continue;
    if (allow_loopback && a[0] == 127) return std::nullopt;
    return std::string(r.what);
  }
  return std::nullopt;
}

std::optional<std::string> forbidden_v6(const std::array<std::uint8_t, 16>& b,
                                        bool allow_loopback) {
  for (const Reserved& r : kReservedV6) {
    if (!in_block(b.data(), r)) continue;
    // Every form that embeds an IPv4 address is decided by that address.
    if (r.embedded_v4 >= 0)
      return forbidden_v4(&b[static_cast<std::size_t>(r.embedded_v4)], allow_loopback);
    if (allow_loopback && r.bits == 128 && b[15] == 1) return std::nullopt;
    return std::string(r.what);
  }
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

/// Runs `expire` once at `deadline` unless destroyed first (on its own thread: a blocked read on
/// the fetching thread cannot delay it).
class SocketDeadline {
 public:
  SocketDeadline(Clock::time_point deadline, std::function<void()> expire)
      : thread_([this, deadline, expire = std::move(expire)] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_until(lock, deadline, [this] { return done_; })) expire();
        }) {}
  ~SocketDeadline() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_one();
    thread_.join();
  }
  SocketDeadline(const SocketDeadline&) = delete;
  SocketDeadline& operator=(const SocketDeadline&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;  ///< last: started once the members it reads exist
};

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
  std::array<std::uint8_t, 4> v4{};
  if (inet_pton(AF_INET, s.c_str(), v4.data()) == 1) return forbidden_v4(v4.data(), allow_loopback);
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
    if (left.count() <= 0) {
      throw url_error(param, "fetching the " + noun + " URL timed out (" +
                                 std::to_string(policy.timeout.count()) +
                                 " ms for the whole fetch, every redirect included)");
    }

    httplib::Client cli(u.scheme + "://" + host_for_url(u.host) + ":" + std::to_string(u.port));
    cli.set_hostname_addr_map({{u.host, addresses.front()}});
    cli.set_follow_location(false);
    cli.set_keep_alive(false);
    cli.set_connection_timeout(left);
    cli.set_read_timeout(left);
    cli.set_write_timeout(left);
    // Every read of this hop (status line, headers, body, whatever the status) waits only until
    // the deadline: a server trickling a byte a second is cut there, not at a per-read timeout.
    cli.set_max_timeout(std::chrono::ceil<std::chrono::milliseconds>(left));
    if (u.scheme == "https") cli.enable_server_certificate_verification(true);
    // And on the socket itself: at the deadline it is shut down, whatever phase the hop is in.
    const SocketDeadline watchdog(deadline, [&cli] { cli.stop(); });

    std::vector<std::uint8_t> body;
    bool too_big = false;
    int status = 0;
    std::string location;
    const httplib::Headers headers = {{"Accept", std::string(kind.accept)}};
    auto res = cli.Get(
        u.target, headers,
        [&](const httplib::Response& r) {
          status = r.status;
          if (r.status != 200) {
            // A redirect or an error: its headers say all clef needs; the body is never read.
            location = r.get_header_value("Location");
            return false;
          }
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
          if (Clock::now() > deadline) return false;
          if (body.size() + n > policy.max_bytes) {
            too_big = true;
            return false;
          }
          body.insert(body.end(), data, data + n);
          return true;
        });
    if (too_big) {
      throw kind.too_large(param + ": the " + noun + " at the URL is larger than " +
                               std::to_string(policy.max_bytes) + " bytes",
                           param);
    }
    if (status >= 300 && status < 400 && !location.empty()) {
      current = resolve_location(u, location);
      continue;
    }
    if (status != 0 && status != 200) {
      throw url_error(param, "the " + noun + " URL answered HTTP " + std::to_string(status));
    }
    // A read cut at the deadline (httplib counts whole milliseconds from a moment later).
    if (Clock::now() >= deadline - std::chrono::milliseconds(50)) {
      throw url_error(param, "fetching the " + noun + " URL timed out (" +
                                 std::to_string(policy.timeout.count()) +
                                 " ms for the whole fetch, every redirect included)");
    }
    if (!res) {
      throw url_error(
          param, "could not fetch the " + noun + " URL (" + httplib::to_string(res.error()) + ")");
    }
    return body;
  }
  throw url_error(param, "the " + noun + " URL redirects more than " +
                             std::to_string(policy.max_redirects) + " times");
}

}  // namespace clef::media
