// clef::json::Value: constructors, checked accessors, CPython-dict-like object insert.

#include "json/value.hpp"

#include <stdexcept>

namespace clef::json {

namespace {

/// True for -?(0|[1-9][0-9]*), the JSON (and CPython str(int)) integer spelling.
bool is_canonical_integer(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  if (s.front() == '0') return s.size() == 1;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

[[noreturn]] void wrong_kind(const char* wanted, const Value& v) {
  throw std::logic_error(std::string("json::Value: expected ") + wanted + ", got " + v.type_name());
}

}  // namespace

template <std::size_t I, typename... A>
Value Value::make(A&&... args) {
  Value v;
  v.data_.emplace<I>(std::forward<A>(args)...);
  return v;
}

Value Value::boolean(bool b) {
  return make<static_cast<std::size_t>(Kind::boolean)>(b);
}

Value Value::integer(std::string digits) {
  if (!is_canonical_integer(digits)) {
    throw std::invalid_argument("json::Value::integer: not a canonical decimal integer: \"" +
                                digits + "\"");
  }
  if (digits.size() == 2 && digits[0] == '-' && digits[1] == '0') digits = "0";
  return make<static_cast<std::size_t>(Kind::integer)>(IntegerDigits{std::move(digits)});
}

Value Value::integer(std::int64_t v) {
  return integer(std::to_string(v));
}

Value Value::floating(double d) {
  return make<static_cast<std::size_t>(Kind::floating)>(d);
}

Value Value::string(std::string utf8) {
  return make<static_cast<std::size_t>(Kind::string)>(std::move(utf8));
}

Value Value::array(std::vector<Value> items) {
  return make<static_cast<std::size_t>(Kind::array)>(std::move(items));
}

Value Value::object(std::vector<Member> members) {
  return make<static_cast<std::size_t>(Kind::object)>(std::move(members));
}

bool Value::as_bool() const {
  if (!is_bool()) wrong_kind("bool", *this);
  return std::get<bool>(data_);
}

const std::string& Value::integer_digits() const {
  if (!is_integer()) wrong_kind("int", *this);
  return std::get<IntegerDigits>(data_).digits;
}

double Value::as_double() const {
  if (!is_float()) wrong_kind("float", *this);
  return std::get<double>(data_);
}

const std::string& Value::as_string() const {
  if (!is_string()) wrong_kind("string", *this);
  return std::get<std::string>(data_);
}

const std::vector<Value>& Value::items() const {
  if (!is_array()) wrong_kind("array", *this);
  return std::get<std::vector<Value>>(data_);
}

const std::vector<Value::Member>& Value::members() const {
  if (!is_object()) wrong_kind("object", *this);
  return std::get<std::vector<Member>>(data_);
}

std::vector<Value>& Value::items() {
  if (!is_array()) wrong_kind("array", *this);
  return std::get<std::vector<Value>>(data_);
}

std::vector<Value::Member>& Value::members() {
  if (!is_object()) wrong_kind("object", *this);
  return std::get<std::vector<Member>>(data_);
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : std::get<std::vector<Member>>(data_)) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::set(std::string key, Value v) {
  auto& ms = members();
  for (auto& [k, existing] : ms) {
    if (k == key) {
      existing = std::move(v);
      return;
    }
  }
  ms.emplace_back(std::move(key), std::move(v));
}

const char* Value::type_name() const noexcept {
  switch (kind()) {
    case Kind::null:
      return "null";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "string";
    case Kind::array:
      return "array";
    case Kind::object:
      return "object";
  }
  return "?";
}

}  // namespace clef::json
