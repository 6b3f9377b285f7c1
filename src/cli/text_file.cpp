#include "cli/text_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/error.hpp"

namespace clef::cli {

void write_text_file(const std::string& path, const std::string& text, const char* field) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.flush();
  if (!out) throw invalid_request("cannot write " + path + " (disk full?)", field);
}

void check_writable(const std::string& path, const char* field) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    throw invalid_request("cannot write " + path + ": it is a directory; give a file name", field);
  }
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec)) {
    throw invalid_request("cannot write " + path + ": no directory " + dir.string(), field);
  }
  const bool exists = fs::exists(p, ec);
  if (::access(exists ? p.c_str() : dir.c_str(), W_OK) != 0) {
    throw invalid_request(
        "cannot write " + path + ": " +
            (exists ? "the file is not writable" : "the directory is not writable"),
        field);
  }
}

}  // namespace clef::cli
