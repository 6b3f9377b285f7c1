#pragma once
// Writing a command's output file (a calibration, a report, a plot).

#include <string>

namespace clef::cli {

/// Writes `text` to `path`, flushed and checked. Throws clef::Error (invalid_request, naming the
/// option `field`) when it cannot be written whole (an unwritable path, a full disk).
void write_text_file(const std::string& path, const std::string& text, const char* field);

/// Checks before a long run that `path` can be written by write_text_file later: not a
/// directory, in an existing directory this process may write to. Writes nothing. Throws
/// clef::Error (invalid_request, naming `field`) saying which.
void check_writable(const std::string& path, const char* field);

}  // namespace clef::cli
