#include "server/http_exchange.hpp"

#include <cctype>
#include <cstdio>
#include <random>
#include <string>

namespace clef::server {

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (same_name(key, name)) return value;
  }
  return {};
}

std::vector<std::string> HttpRequest::header_values(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [key, value] : headers) {
    if (same_name(key, name)) out.push_back(value);
  }
  return out;
}

bool HttpRequest::has_header(std::string_view name) const {
  for (const auto& entry : headers) {
    if (same_name(entry.first, name)) return true;
  }
  return false;
}

void HttpResponse::set_header(std::string name, std::string value) {
  for (auto& entry : headers) {
    if (same_name(entry.first, name)) {
      entry.second = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

bool HttpResponse::closes() const {
  for (const auto& [key, value] : headers) {
    if (same_name(key, "Connection") && same_name(value, "close")) return true;
  }
  return false;
}

RequestIds::RequestIds() {
  std::random_device device;
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%08x", static_cast<unsigned>(device()));
  prefix_ = std::string("req-") + buffer + "-";
}

std::string RequestIds::next() {
  return prefix_ + std::to_string(counter_.fetch_add(1, std::memory_order_relaxed) + 1);
}

namespace {

bool acceptable_client_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string RequestIds::for_request(std::string_view client_id) {
  return acceptable_client_id(client_id) ? std::string(client_id) : next();
}

using transport::trim_blanks;

bool is_json_content_type(std::string_view content_type) noexcept {
  std::string_view media = trim_blanks(content_type.substr(0, content_type.find(';')));
  if (trim_blanks(content_type).empty()) return true;
  std::string lower(media);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "application/json") return true;
  constexpr std::string_view app = "application/";
  constexpr std::string_view suffix = "+json";
  return lower.size() > app.size() + suffix.size() && lower.starts_with(app) &&
         lower.ends_with(suffix);
}

std::string content_type_charset(std::string_view content_type) {
  std::string lower(content_type);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view rest(lower);
  while (true) {
    auto semi = rest.find(';');
    if (semi == std::string_view::npos) return "";
    rest.remove_prefix(semi + 1);
    std::string_view param = trim_blanks(rest.substr(0, rest.find(';')));
    if (!param.starts_with("charset=")) continue;
    std::string_view value = trim_blanks(param.substr(8));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return std::string(value);
  }
}

std::string framing_problem(const std::vector<std::string>& lengths,
                            std::string_view transfer_encoding) {
  std::optional<std::uint64_t> first;
  for (const std::string& value : lengths) {
    auto length = parse_content_length(value);
    if (!length || *length > (std::uint64_t{1} << 63)) {
      return "Content-Length must be a decimal number of bytes, got '" + value + "'";
    }
    if (first && *first != *length) return "conflicting Content-Length headers";
    first = length;
  }
  std::string coding(trim_blanks(transfer_encoding));
  for (char& c : coding) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!coding.empty() && !lengths.empty()) {
    return "Content-Length and Transfer-Encoding must not both be sent";
  }
  if (!coding.empty() && coding != "chunked") {
    return "Transfer-Encoding '" + std::string(transfer_encoding) +
           "' is not supported (only chunked)";
  }
  return "";
}

}  // namespace clef::server
