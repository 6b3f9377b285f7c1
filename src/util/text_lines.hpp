#pragma once
// The lines of a JSON Lines file (`clef batch` input, `clef calibrate` labeled data), numbered as
// an editor shows them.

#include <string_view>
#include <vector>

namespace clef::util {

struct TextLine {
  int number = 0;         ///< 1-based
  std::string_view text;  ///< without its "\n" (and a "\r" before it)
};

/// The non-blank lines of `text`: a leading UTF-8 byte order mark is skipped, a trailing "\r" is
/// cut, lines of only spaces and tabs are left out (the others keep their numbers).
std::vector<TextLine> nonblank_lines(std::string_view text);

}  // namespace clef::util
