#include "record/nfc.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "util/error.hpp"

namespace clef::record {
namespace {

struct FreeDeleter {
  void operator()(utf8proc_uint8_t* p) const noexcept { std::free(p); }
};

bool is_ascii(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

}  // namespace

std::string nfc(std::string_view utf8) {
  if (is_ascii(utf8)) return std::string(utf8);
  utf8proc_uint8_t* raw = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
                   static_cast<utf8proc_ssize_t>(utf8.size()), &raw,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, FreeDeleter> out(raw);
  if (n < 0) {
    throw invalid_request(std::string("text is not valid Unicode (") + utf8proc_errmsg(n) + ")");
  }
  return std::string(reinterpret_cast<const char*>(out.get()), static_cast<std::size_t>(n));
}

}  // namespace clef::record
