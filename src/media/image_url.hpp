#pragma once
// Fetching request images from http(s) URLs without letting a request reach the server's own
// network: every address the host resolves to is checked, the connection goes to a checked
// address, redirects are re-checked hop by hop, and size and time are bounded.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "media/errors.hpp"

namespace clef::media {

/// Limits and switches of image URL fetching.
struct UrlFetchPolicy {
  std::size_t max_bytes = std::size_t{20} * 1024 * 1024;  ///< largest body, bytes
  std::chrono::milliseconds timeout{10'000};              ///< whole fetch, all hops
  int max_redirects = 3;                                  ///< each target checked like the first
  /// TEST ONLY: also allow loopback addresses (127/8, ::1), so a test can fetch from a server on
  /// localhost. Never set this outside tests: it lets a request reach services on the host.
  bool allow_loopback_for_tests = false;
};

/// The parts of an http(s) URL.
struct HttpUrl {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< name or address literal, without IPv6 brackets
  int port = 0;        ///< explicit or the scheme's default
  std::string target;  ///< path and query, "/" when empty
};

/// Parses `url`. Throws clef::Error (400, `param`) for anything but http(s)://host[:port][/...]
/// (user info, fragments-only, empty host, bad port, control characters or spaces).
HttpUrl parse_http_url(std::string_view url, const std::string& param = {});

/// Why an IP address literal may not be fetched, or nullopt when it may: loopback (127/8, ::1),
/// private (10/8, 172.16/12, 192.168/16), carrier-grade NAT (100.64/10), link-local (169.254/16,
/// including the cloud metadata address 169.254.169.254; fe80::/10), unique-local (fc00::/7),
/// unspecified / "this network" (0/8, ::), multicast (224/4, ff00::/8), reserved (240/4 and
/// broadcast), documentation and the other special-purpose blocks of IANA's registries, Azure's
/// metadata address, the deprecated IPv4-compatible IPv6 block, and IPv4-mapped / -translated /
/// NAT64 / 6to4 IPv6 forms of the refused IPv4 ranges. With
/// `allow_loopback` loopback is allowed. Returns a reason for a string that is not an address.
std::optional<std::string> forbidden_address_reason(std::string_view ip,
                                                    bool allow_loopback = false);

/// Fetches `url` (http or https) within `policy` and returns the body bytes of a request's
/// `kind` of media (its noun in messages, its Accept header and 413 code). Refusals are
/// clef::Error naming `param`: 400 for a malformed URL, a host that does not resolve, a forbidden
/// address (any resolved address forbidden refuses the URL, before connecting), too many
/// redirects or an HTTP error status; 413 (kind.too_large_code) for a body over max_bytes;
/// 504-like failures (timeout, connection refused) are 400 "could not fetch".
std::vector<std::uint8_t> fetch_media_url(std::string_view url, const UrlFetchPolicy& policy,
                                          const std::string& param = {},
                                          const MediaKind& kind = kImageMedia);

}  // namespace clef::media
