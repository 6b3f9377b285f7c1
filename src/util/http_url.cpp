#include "util/http_url.hpp"

#include "util/error.hpp"

namespace clef::util {

std::string HttpUrl::origin() const {
  return scheme + "://" + host + ":" + std::to_string(port);
}

HttpUrl parse_http_url(std::string_view url, const std::string& param) {
  auto bad = [&](const char* why) -> Error {
    std::string message = "\"";
    message.append(url).append("\" is not a usable http(s)://host[:port][/path] URL: ").append(why);
    return invalid_request(message, param);
  };
  HttpUrl out;
  std::string_view rest;
  if (url.substr(0, 7) == "http://") {
    out.scheme = "http";
    rest = url.substr(7);
  } else if (url.substr(0, 8) == "https://") {
    out.scheme = "https";
    rest = url.substr(8);
  } else {
    throw bad("only http and https");
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  out.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  if (out.path.find_first_of("?#") != std::string::npos) throw bad("no query or fragment");
  if (authority.find('@') != std::string_view::npos) throw bad("no user info");
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw bad("an unclosed IPv6 address");
    out.host = std::string(authority.substr(0, close + 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad("text after the IPv6 address");
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    for (char c : out.host) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_';
      if (!ok) throw bad("the host has a character that is not allowed");
    }
  }
  if (out.host.empty() || out.host == "[]") throw bad("no host");
  if (port_text.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else {
    if (port_text.size() > 5 ||
        port_text.find_first_not_of("0123456789") != std::string_view::npos) {
      throw bad("the port is not a number");
    }
    out.port = std::stoi(std::string(port_text));
    if (out.port < 1 || out.port > 65535) throw bad("the port is not in 1..65535");
  }
  return out;
}

}  // namespace clef::util
