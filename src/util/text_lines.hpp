#pragma once
// The lines of a JSON Lines file (`clef batch` input, `clef calibrate` labeled data), numbered as
// an editor shows them.

#include <cstddef>
#include <filesystem>
#include <string>
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

/// The whole text of the JSON Lines file `path`, read in pieces so that a line longer than
/// `max_line_bytes` is refused as soon as it is (a file without line ends, or /dev/zero, would
/// otherwise be read whole into memory). Throws clef::Error (invalid_request, naming `field`)
/// when the file cannot be read or a line is too long, naming its number.
std::string read_lines_file(const std::filesystem::path& path, std::size_t max_line_bytes,
                            const std::string& field);

}  // namespace clef::util
