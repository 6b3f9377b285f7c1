#include "cli/option_kinds.hpp"

#include <algorithm>
#include <cctype>

namespace clef::cli {

std::string plain_size(std::string& text) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  std::string v = text;
  v.erase(v.begin(), std::find_if_not(v.begin(), v.end(), space));
  v.erase(std::find_if_not(v.rbegin(), v.rend(), space).base(), v.end());
  if (!v.empty() && v.front() == '-') return "a size of 0 or more is needed, got " + text;
  const auto digits_end =
      std::find_if_not(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  std::string digits(v.begin(), digits_end);
  const std::string unit(digits_end, v.end());
  const bool unit_ok = std::all_of(unit.begin(), unit.end(), [](unsigned char c) {
    return std::isalpha(c) != 0 || std::isspace(c) != 0;
  });
  if (digits.empty() || !unit_ok) {
    return "a size is whole decimal bytes, optionally with a unit (KiB, MiB, GiB, KB, MB, GB), "
           "got " +
           text;
  }
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  static const std::string kMost = "18446744073709551615";  // 2^64 - 1
  if (digits.size() > kMost.size() || (digits.size() == kMost.size() && digits > kMost)) {
    return "a size of at most 18446744073709551615 bytes is needed, got " + text;
  }
  text = digits + unit;
  return {};
}

}  // namespace clef::cli
