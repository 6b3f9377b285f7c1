#include "server/http_checks.hpp"

#include <cctype>
#include <string>

namespace clef::server {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool is_json_content_type(std::string_view content_type) noexcept {
  std::string_view media = trim(content_type.substr(0, content_type.find(';')));
  if (trim(content_type).empty()) return true;
  std::string lower(media);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "application/json") return true;
  constexpr std::string_view app = "application/";
  constexpr std::string_view suffix = "+json";
  return lower.size() > app.size() + suffix.size() && lower.starts_with(app) &&
         lower.ends_with(suffix);
}

std::optional<std::uint64_t> parse_content_length(std::string_view value) noexcept {
  value = trim(value);
  if (value.empty() || value.size() > 19) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

}  // namespace clef::server
