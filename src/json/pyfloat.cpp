// CPython float repr/parse/round. The digits come from <charconv>: to_chars gives the shortest
// round-trip digits (as CPython's _Py_dg_dtoa mode 0) and correctly rounded fixed digits (mode
// 3, ties to even on the exact binary value); from_chars is correctly rounded (_Py_dg_strtod).

#include "json/pyfloat.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace clef::json {

namespace {

/// Decimal exponent e of the first nonzero digit (value ~ d.ddd×10^e) of a JSON-grammar number,
/// saturated to ±2^30; used only to tell overflow from underflow when from_chars says
/// "out of range", where the answer is never near 0.
long long scientific_exponent(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  long long position = 0;  // exponent of the current digit
  bool seen_point = false;
  long long int_digits = 0;
  long long first_nonzero = std::numeric_limits<long long>::min();
  long long index = 0;  // index of the digit among all mantissa digits
  for (; i < s.size() && s[i] != 'e' && s[i] != 'E'; ++i) {
    if (s[i] == '.') {
      seen_point = true;
      continue;
    }
    if (!seen_point) ++int_digits;
    if (s[i] != '0' && first_nonzero == std::numeric_limits<long long>::min())
      first_nonzero = index;
    ++index;
  }
  if (first_nonzero == std::numeric_limits<long long>::min()) return 0;  // zero: never out of range
  position = int_digits - 1 - first_nonzero;
  long long exponent = 0;
  if (i < s.size()) {
    ++i;  // 'e'
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    constexpr long long kCap = 1LL << 30;
    for (; i < s.size(); ++i) {
      if (exponent < kCap) exponent = exponent * 10 + (s[i] - '0');
    }
    if (negative) exponent = -exponent;
  }
  return exponent + position;
}

/// Digits of std::to_chars output into a buffer; the buffer holds any double in any of the
/// formats used here (the longest: fixed with 323 decimals, ~640 characters).
using CharBuffer = std::array<char, 1100>;

}  // namespace

double decimal_to_double(std::string_view s) {
  double d = 0.0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  (void)ptr;
  if (ec == std::errc::result_out_of_range) {
    const bool negative = !s.empty() && s.front() == '-';
    const double magnitude =
        scientific_exponent(s) > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    return negative ? -magnitude : magnitude;
  }
  return d;
}

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";

  CharBuffer buf;
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::scientific);
  std::string_view sci(buf.data(), static_cast<std::size_t>(res.ptr - buf.data()));
  // sci is "[-]d[.ddd]e[+-]XX"
  std::string out;
  if (sci.front() == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const std::size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  int exponent = 0;
  std::string_view exp_text = sci.substr(e_pos + 1);
  if (exp_text.front() == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);

  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      const auto int_len = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() <= int_len) {
        out += digits;
        out.append(int_len - digits.size(), '0');
        out += ".0";
      } else {
        out.append(digits, 0, int_len);
        out.push_back('.');
        out.append(digits, int_len);
      }
    } else {
      out += "0.";
      out.append(static_cast<std::size_t>(-exponent - 1), '0');
      out += digits;
    }
    return out;
  }
  out.push_back(digits.front());
  if (digits.size() > 1) {
    out.push_back('.');
    out.append(digits, 1);
  }
  out.push_back('e');
  out.push_back(exponent < 0 ? '-' : '+');
  const int magnitude = exponent < 0 ? -exponent : exponent;
  if (magnitude < 10) out.push_back('0');
  out += std::to_string(magnitude);
  return out;
}

double py_round(double x, int ndigits) {
  // Objects/floatobject.c: NDIGITS_MAX = (DBL_MANT_DIG - DBL_MIN_EXP) * 0.30103 = 323,
  // NDIGITS_MIN = -(DBL_MAX_EXP + 1) * 0.30103 = -308.
  constexpr int kNdigitsMax = 323;
  constexpr int kNdigitsMin = -308;
  if (!std::isfinite(x) || ndigits > kNdigitsMax) return x;
  if (ndigits < kNdigitsMin) return 0.0 * x;

  CharBuffer buf;
  if (ndigits >= 0) {
    auto res =
        std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::fixed, ndigits);
    return decimal_to_double(std::string_view(buf.data(), res.ptr - buf.data()));
  }

  // Negative ndigits: round the exact integer part of |x| to a multiple of 10^m by hand (the
  // fraction only matters to break what would otherwise be a tie).
  const auto m = static_cast<std::size_t>(-ndigits);
  const double ax = std::fabs(x);
  const double int_part = std::trunc(ax);
  const bool fraction_nonzero = ax != int_part;
  auto res =
      std::to_chars(buf.data(), buf.data() + buf.size(), int_part, std::chars_format::fixed, 0);
  std::string digits(buf.data(), res.ptr);
  if (digits.size() < m + 1) digits.insert(0, m + 1 - digits.size(), '0');
  std::string kept = digits.substr(0, digits.size() - m);
  const std::string rest = digits.substr(digits.size() - m);
  std::string half(m, '0');
  half.front() = '5';
  const int cmp = rest.compare(half);
  bool up = cmp > 0 || (cmp == 0 && fraction_nonzero);
  if (cmp == 0 && !fraction_nonzero) up = (kept.back() - '0') % 2 == 1;  // tie: to even
  if (up) {
    std::size_t i = kept.size();
    while (i > 0 && kept[i - 1] == '9') kept[--i] = '0';
    if (i == 0) {
      kept.insert(kept.begin(), '1');
    } else {
      ++kept[i - 1];
    }
  }
  std::string text;
  if (std::signbit(x)) text.push_back('-');
  text += kept;
  text.append(m, '0');
  return decimal_to_double(text);
}

}  // namespace clef::json
