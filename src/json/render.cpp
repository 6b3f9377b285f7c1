// json.dumps(ensure_ascii=False, separators=(",", ":")) as in CPython's Lib/json/encoder.py and
// Modules/_json.c (escape_unicode for ensure_ascii=False, float.__repr__ via floatstr).

#include "json/render.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "json/pyfloat.hpp"

namespace clef::json {

namespace {

constexpr char kHex[] = "0123456789abcdef";

/// True for the bytes json.dumps escapes with ensure_ascii=False.
constexpr bool needs_escape(unsigned char c) {
  return c < 0x20 || c == '"' || c == '\\';
}

void append_float(std::string& out, double d) {
  // Lib/json/encoder.py floatstr(): NaN, Infinity, -Infinity, else float.__repr__.
  if (std::isnan(d)) {
    out += "NaN";
  } else if (std::isinf(d)) {
    out += d > 0 ? "Infinity" : "-Infinity";
  } else {
    out += float_repr(d);
  }
}

void append_value(std::string& out, const Value& v, bool sort_keys) {
  switch (v.kind()) {
    case Kind::null:
      out += "null";
      return;
    case Kind::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case Kind::integer:
      out += v.integer_digits();
      return;
    case Kind::floating:
      append_float(out, v.as_double());
      return;
    case Kind::string:
      append_quoted(out, v.as_string());
      return;
    case Kind::array: {
      out.push_back('[');
      bool first = true;
      for (const Value& item : v.items()) {
        if (!first) out.push_back(',');
        first = false;
        append_value(out, item, sort_keys);
      }
      out.push_back(']');
      return;
    }
    case Kind::object: {
      const auto& members = v.members();
      std::vector<const Value::Member*> order;
      order.reserve(members.size());
      for (const auto& m : members) order.push_back(&m);
      // std::string compares bytes as unsigned char; for UTF-8 that is code point order, which
      // is how CPython sorts str keys. Stable, like sorted() on dict items.
      auto by_key = [](const Value::Member* a, const Value::Member* b) {
        return a->first < b->first;
      };
      if (sort_keys && !std::is_sorted(order.begin(), order.end(), by_key)) {
        std::stable_sort(order.begin(), order.end(), by_key);
      }
      out.push_back('{');
      bool first = true;
      for (const Value::Member* m : order) {
        if (!first) out.push_back(',');
        first = false;
        append_quoted(out, m->first);
        out.push_back(':');
        append_value(out, m->second, sort_keys);
      }
      out.push_back('}');
      return;
    }
  }
}

}  // namespace

void append_quoted(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes copied as is
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!needs_escape(c)) continue;
    out.append(s, run, i - run);
    run = i + 1;
    out.push_back('\\');
    switch (c) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\n':
        out.push_back('n');
        break;
      case '\r':
        out.push_back('r');
        break;
      case '\t':
        out.push_back('t');
        break;
      case '\b':
        out.push_back('b');
        break;
      case '\f':
        out.push_back('f');
        break;
      default:
        out += "u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xF]);
    }
  }
  out.append(s, run, s.size() - run);
  out.push_back('"');
}

std::string dumps(const Value& v) {
  std::string out;
  append_value(out, v, true);
  return out;
}

std::string dumps_unsorted(const Value& v) {
  std::string out;
  append_value(out, v, false);
  return out;
}

std::string render(const Value& v) {
  return v.is_string() ? v.as_string() : dumps(v);
}

}  // namespace clef::json
