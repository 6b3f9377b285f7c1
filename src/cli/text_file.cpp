#include "cli/text_file.hpp"

#include <fstream>

#include "util/error.hpp"

namespace clef::cli {

void write_text_file(const std::string& path, const std::string& text, const char* field) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.flush();
  if (!out) throw invalid_request("cannot write " + path + " (disk full?)", field);
}

}  // namespace clef::cli
