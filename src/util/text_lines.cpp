#include "util/text_lines.hpp"

#include <algorithm>

namespace clef::util {

std::vector<TextLine> nonblank_lines(std::string_view text) {
  std::vector<TextLine> out;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  int number = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    out.push_back({number, line});
  }
  return out;
}

}  // namespace clef::util
