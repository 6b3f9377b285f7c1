#include "server/web_files.hpp"

namespace clef::server {

const WebFile* find_web_file(std::string_view path) noexcept {
  for (const WebFile& f : web_files()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

}  // namespace clef::server
