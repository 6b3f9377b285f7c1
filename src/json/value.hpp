#pragma once
// clef::json::Value: a JSON value exactly as CPython's json.loads would hold it, so that render()
// can reproduce json.dumps byte for byte (decision contract, section 2).
//   - objects keep key order; a duplicated key keeps its FIRST position with the LAST value;
//   - integers keep their exact decimal digits at any size (CPython int), "-0" becomes "0";
//   - a number with a fraction or exponent is a double (CPython float), NaN/Infinity allowed;
//   - strings are valid UTF-8 (lone surrogates are refused by the parser).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace clef::json {

enum class Kind { null, boolean, integer, floating, string, array, object };

class Value {
 public:
  using Member = std::pair<std::string, Value>;

  Value() = default;  ///< null
  static Value null() { return Value(); }
  static Value boolean(bool b);
  /// `digits`: canonical decimal integer ("-12", "0", "12345678901234567890123"); "-0" becomes
  /// "0". Throws std::invalid_argument for anything else (leading zeros, '+', empty, non-digits).
  static Value integer(std::string digits);
  static Value integer(std::int64_t v);
  static Value floating(double d);
  static Value string(std::string utf8);
  static Value array(std::vector<Value> items = {});
  static Value object(std::vector<Member> members = {});

  Kind kind() const noexcept { return static_cast<Kind>(data_.index()); }
  bool is_null() const noexcept { return kind() == Kind::null; }
  bool is_bool() const noexcept { return kind() == Kind::boolean; }
  bool is_integer() const noexcept { return kind() == Kind::integer; }
  bool is_float() const noexcept { return kind() == Kind::floating; }
  bool is_number() const noexcept { return is_integer() || is_float(); }
  bool is_string() const noexcept { return kind() == Kind::string; }
  bool is_array() const noexcept { return kind() == Kind::array; }
  bool is_object() const noexcept { return kind() == Kind::object; }

  bool as_bool() const;                        ///< throws std::logic_error if not a bool
  const std::string& integer_digits() const;   ///< throws std::logic_error if not an integer
  double as_double() const;                    ///< float value; throws if not a float
  const std::string& as_string() const;        ///< throws std::logic_error if not a string
  const std::vector<Value>& items() const;     ///< throws std::logic_error if not an array
  const std::vector<Member>& members() const;  ///< throws std::logic_error if not an object
  std::vector<Value>& items();
  std::vector<Member>& members();

  /// Object lookup (linear; objects are small). nullptr when absent or not an object.
  const Value* find(std::string_view key) const;

  /// Object insert with CPython dict semantics: an existing key keeps its position and gets the
  /// new value; a new key is appended.
  void set(std::string key, Value v);

  /// Python-style type name for error messages: "null", "bool", "int", "float", "string",
  /// "array", "object".
  const char* type_name() const noexcept;

  /// Structural equality; floats compare as doubles (so NaN != NaN, 0.0 == -0.0).
  friend bool operator==(const Value&, const Value&) = default;

 private:
  struct IntegerDigits {
    std::string digits;
    friend bool operator==(const IntegerDigits&, const IntegerDigits&) = default;
  };
  // One alternative per Kind, in Kind's order (kind() is the index). A variant keeps a Value at
  // 40 bytes, which matters for a 16 MiB body of small numbers (millions of values).
  using Data = std::variant<std::monostate, bool, IntegerDigits, double, std::string,
                            std::vector<Value>, std::vector<Member>>;
  template <std::size_t I, typename... A>
  static Value make(A&&... args);

  Data data_;
};

}  // namespace clef::json
