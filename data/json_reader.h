// The project's one JSON reader, for data files and configs alike, in two
// dialects:
//   Strict: RFC 8259 JSON (JSONL data such as HellaSwag's): double-quoted keys
//     and strings, no control characters or lone surrogates in strings,
//     commas between and only between items.
//   Hjson: what DeepSpeed reads a ds_config with (hjson.load): also # // and
//     /* */ comments, optional and trailing commas, unquoted keys, quoteless
//     strings (to the end of the line), '...' and '''multi-line''' strings, and
//     a root object without braces.
// Duplicate keys are refused in both (DeepSpeed refuses them; JSON data never
// needs them). Every value carries its line; errors name the source, line and
// column.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace zt {

struct JsonValue;

struct JsonMember {
  std::string key;
  int line = 0;
  std::vector<JsonValue> value;  // exactly one element (a vector: JsonValue is incomplete here)
};

struct JsonValue {
  enum class Kind { null, boolean, number, string, object, array };
  Kind kind = Kind::null;
  std::string text;  // scalars: the number as written, the decoded string, "true"/"false"/"null"
  int line = 0;
  std::vector<JsonMember> members;  // objects, in file order
  std::vector<JsonValue> items;     // arrays

  bool is_string(const char* s) const { return kind == Kind::string && text == s; }
  // The member's value, or nullptr.
  const JsonValue* find(const std::string& key) const;
  // A number's value (kind number).
  double number() const;
};

enum class JsonDialect { Strict, Hjson };

// "SOURCE:LINE:COLUMN: JSON syntax error: WHAT", or for a repeated key
// "SOURCE:LINE: key 'PATH': duplicate key".
struct JsonError : std::runtime_error {
  JsonError(const std::string& message, bool duplicate)
      : std::runtime_error(message), duplicate_key(duplicate) {}
  bool duplicate_key;
};

// Parses one document; `first_line` numbers the text's first line (a JSONL
// reader passes the line's number). Nesting deeper than 64 levels is refused.
JsonValue parse_json(const std::string& text, const std::string& source, JsonDialect dialect,
                     int first_line = 1);

// "'abc'", "a JSON object", "an array of 3", "null", "true", "5": for "got ..." messages
// (a string's control bytes as \xNN, data/escape_control.h).
std::string describe_json(const JsonValue& v);

}  // namespace zt
