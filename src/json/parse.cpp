// A strict JSON reader that matches CPython's json.loads (Modules/_json.c scanner, strict=True).
//
// Why not RapidJSON's SAX Reader: RapidJSON 1.1.0 (the packaged version) refuses "1e400" and
// numbers with more than ~308 integer digits with kParseErrorNumberTooBig even under
// kParseNumbersAsStringsFlag (reader.h ParseNumber checks the magnitude before handing out the
// lexeme), which CPython reads as inf; it also accepts "-NaN", "Inf", "-Inf" and passes lone low
// surrogate escapes ("\udc00") through as invalid UTF-8. Those are not gaps a handler can close,
// so clef reads JSON itself: one pass, an explicit stack instead of recursion.

#include "json/parse.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "json/pyfloat.hpp"
#include "json/utf8.hpp"
#include "util/error.hpp"

namespace clef::json {

namespace {

/// CPython 3.11's default sys.int_info.default_max_str_digits: json.loads refuses longer ints.
constexpr std::size_t kMaxIntegerDigits = 4300;

/// Makes object keys unique with CPython dict semantics: the first position, the last value.
void merge_duplicate_keys(std::vector<Value::Member>& members) {
  const std::size_t n = members.size();
  if (n < 2) return;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return members[a].first < members[b].first;
  });
  std::vector<bool> dropped(n, false);
  bool any = false;
  for (std::size_t g = 0; g < n;) {
    std::size_t e = g + 1;
    while (e < n && members[order[e]].first == members[order[g]].first) ++e;
    if (e - g > 1) {
      any = true;
      members[order[g]].second = std::move(members[order[e - 1]].second);
      for (std::size_t k = g + 1; k < e; ++k) dropped[order[k]] = true;
    }
    g = e;
  }
  if (!any) return;
  std::size_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (dropped[i]) continue;
    if (out != i) members[out] = std::move(members[i]);
    ++out;
  }
  members.resize(out);
}

class Parser {
 public:
  Parser(std::string_view text, const ParseLimits& limits) : s_(text), limits_(limits) {}

  Value run() {
    if (s_.size() >= 3 && s_.substr(0, 3) == "\xEF\xBB\xBF") {
      fail(0, "unexpected UTF-8 byte order mark");
    }
    if (const std::size_t bad = first_invalid_utf8(s_); bad != std::string_view::npos) {
      fail(bad, "invalid UTF-8");
    }
    Value v;
    for (;;) {
      // Expecting a value.
      skip_whitespace();
      const char c = peek();
      if (c == '[') {
        open(Value::array());
        ++pos_;
        skip_whitespace();
        if (peek() == ']') {
          ++pos_;
          v = close();
        } else {
          continue;
        }
      } else if (c == '{') {
        open(Value::object());
        ++pos_;
        skip_whitespace();
        if (peek() == '}') {
          ++pos_;
          v = close();
        } else {
          read_key();
          continue;
        }
      } else {
        v = scalar();
      }
      // A value is complete: attach it to open containers, closing those that end here.
      for (;;) {
        if (stack_.empty()) {
          skip_whitespace();
          if (pos_ != s_.size()) fail(pos_, "extra data after the JSON value");
          account(v, 0);
          flush_charge();
          return v;
        }
        Frame& top = stack_.back();
        skip_whitespace();
        const char d = peek();
        account(v, top.value.is_array() ? 0 : top.key.size());
        if (top.value.is_array()) {
          top.value.items().push_back(std::move(v));
          if (d == ',') {
            ++pos_;
            break;
          }
          if (d != ']') fail(pos_, "expected ',' or ']'");
        } else {
          top.value.members().emplace_back(std::move(top.key), std::move(v));
          if (d == ',') {
            ++pos_;
            skip_whitespace();
            read_key();
            break;
          }
          if (d != '}') fail(pos_, "expected ',' or '}'");
        }
        ++pos_;
        v = close();
      }
    }
  }

 private:
  /// The memory `v` takes once attached (a container's slot, with room for its vector's growth,
  /// its key and its own text), charged to limits.charge about every MiB.
  void account(const Value& v, std::size_t key_bytes) {
    if (!limits_.charge) return;
    used_ += 2 * (key_bytes > 0 ? sizeof(Value::Member) : sizeof(Value)) + key_bytes;
    if (v.is_string()) used_ += v.as_string().size();
    if (v.is_integer()) used_ += v.integer_digits().size();
    if (used_ - charged_ >= (std::size_t{1} << 20)) flush_charge();
  }
  void flush_charge() {
    if (!limits_.charge || used_ == charged_) return;
    limits_.charge(static_cast<std::ptrdiff_t>(used_ - charged_));
    charged_ = used_;
  }

  struct Frame {
    Value value;      // the array or object being filled
    std::string key;  // objects: the key whose value is being read
  };

  [[noreturn]] void fail(std::size_t offset, std::string_view what) const {
    throw Error(ErrorKind::invalid_request, "invalid_json",
                "invalid JSON at byte " + std::to_string(offset) + ": " + std::string(what));
  }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void skip_whitespace() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }

  void open(Value container) {
    if (stack_.size() >= static_cast<std::size_t>(std::max(limits_.max_depth, 0))) {
      fail(pos_, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    stack_.push_back(Frame{std::move(container), {}});
  }

  Value close() {
    Value v = std::move(stack_.back().value);
    stack_.pop_back();
    if (v.is_object()) merge_duplicate_keys(v.members());
    return v;
  }

  /// At a key: reads `"...":` into the top frame's key.
  void read_key() {
    if (peek() != '"') fail(pos_, "expected a property name in double quotes");
    ++pos_;
    std::string& key = stack_.back().key;
    key.clear();
    read_string_body(key);
    skip_whitespace();
    if (peek() != ':') fail(pos_, "expected ':'");
    ++pos_;
  }

  bool consume_word(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value scalar() {
    const std::size_t start = pos_;
    switch (peek()) {
      case '"': {
        ++pos_;
        std::string out;
        read_string_body(out);
        return Value::string(std::move(out));
      }
      case 't':
        if (consume_word("true")) return Value::boolean(true);
        break;
      case 'f':
        if (consume_word("false")) return Value::boolean(false);
        break;
      case 'n':
        if (consume_word("null")) return Value::null();
        break;
      case 'N':
        if (consume_word("NaN")) return Value::floating(std::numeric_limits<double>::quiet_NaN());
        break;
      case 'I':
        if (consume_word("Infinity")) {
          return Value::floating(std::numeric_limits<double>::infinity());
        }
        break;
      case '-':
        if (consume_word("-Infinity")) {
          return Value::floating(-std::numeric_limits<double>::infinity());
        }
        return number();
      default:
        if (peek() >= '0' && peek() <= '9') return number();
    }
    fail(start, pos_ < s_.size() ? "expected a value" : "expected a value, got end of text");
  }

  bool at_digit() const { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; }

  /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
  Value number() {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (at_digit()) {
      while (at_digit()) ++pos_;
    } else {
      fail(start, "expected a value");
    }
    const std::size_t int_end = pos_;
    bool is_float = false;
    if (peek() == '.') {
      ++pos_;
      if (!at_digit()) fail(pos_, "expected a digit after '.'");
      while (at_digit()) ++pos_;
      is_float = true;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!at_digit()) fail(pos_, "expected a digit in the exponent");
      while (at_digit()) ++pos_;
      is_float = true;
    }
    const std::string_view lexeme = s_.substr(start, pos_ - start);
    if (is_float) return Value::floating(decimal_to_double(lexeme));
    const std::size_t digits = int_end - start - (s_[start] == '-' ? 1 : 0);
    if (digits > kMaxIntegerDigits) {
      fail(start, "integer with " + std::to_string(digits) + " digits; the limit is " +
                      std::to_string(kMaxIntegerDigits));
    }
    return Value::integer(std::string(lexeme));  // "-0" becomes "0"
  }

  unsigned hex4() {
    if (s_.size() - pos_ < 4) fail(pos_, "expected four hex digits after \\u");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[pos_ + k];
      unsigned d;
      if (c >= '0' && c <= '9') {
        d = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail(pos_, "expected four hex digits after \\u");
      }
      v = v * 16 + d;
    }
    pos_ += 4;
    return v;
  }

  /// After the opening quote: reads up to and including the closing quote into `out`. The text
  /// is already known to be valid UTF-8, so runs of ordinary bytes are copied as they are.
  void read_string_body(std::string& out) {
    for (;;) {
      const std::size_t run = pos_;
      while (pos_ < s_.size()) {
        const auto c = static_cast<unsigned char>(s_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        ++pos_;
      }
      out.append(s_, run, pos_ - run);
      if (pos_ >= s_.size()) fail(pos_, "unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c != '\\') fail(pos_, "invalid control character in a string");
      const std::size_t escape = pos_;
      ++pos_;
      if (pos_ >= s_.size()) fail(pos_, "unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(escape, "lone surrogate escape (not a Unicode character)");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") {
              fail(escape, "lone surrogate escape (not a Unicode character)");
            }
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) {
              fail(escape, "lone surrogate escape (not a Unicode character)");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail(escape, "invalid escape");
      }
    }
  }

  std::string_view s_;
  const ParseLimits& limits_;
  std::size_t used_ = 0;     ///< bytes of the values made so far (account())
  std::size_t charged_ = 0;  ///< of them, charged to limits_.charge
  std::size_t pos_ = 0;
  std::vector<Frame> stack_;
};

}  // namespace

Value parse(std::string_view text, const ParseLimits& limits) {
  if (text.size() > limits.max_bytes) {
    throw Error(ErrorKind::payload_too_large, "request_too_large",
                "JSON text of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                    std::to_string(limits.max_bytes) + " bytes");
  }
  return Parser(text, limits).run();
}

}  // namespace clef::json
