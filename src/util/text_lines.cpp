#include "util/text_lines.hpp"

#include <algorithm>
#include <fstream>

#include "util/byte_size.hpp"
#include "util/error.hpp"

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

std::string read_lines_file(const std::filesystem::path& path, std::size_t max_line_bytes,
                            const std::string& field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_request("cannot read " + path.string(), field);
  std::string text;
  std::size_t line_start = 0;  // where the line being read began
  int line = 1;
  char piece[1 << 16];
  while (in.read(piece, sizeof piece) || in.gcount() > 0) {
    const std::size_t from = text.size();
    text.append(piece, static_cast<std::size_t>(in.gcount()));
    for (std::size_t at = text.find('\n', from); at != std::string::npos;
         at = text.find('\n', at + 1)) {
      if (at - line_start > max_line_bytes) break;
      line_start = at + 1;
      ++line;
    }
    if (text.size() - line_start > max_line_bytes) {
      throw invalid_request(path.string() + ": line " + std::to_string(line) + " is longer than " +
                                human_bytes(max_line_bytes) + " (a request is at most that)",
                            field);
    }
  }
  if (in.bad()) throw invalid_request("cannot read " + path.string(), field);
  return text;
}

}  // namespace clef::util
