// A reader for the JSON that DeepSpeed reads: DeepSpeed loads a config file with
// hjson.load(..., object_pairs_hook=dict_raise_error_on_duplicate_keys), so a ds_config may be
// Hjson: # // and /* */ comments, optional and trailing commas, unquoted keys, quoteless
// strings (to the end of the line), '...' and '''multi-line''' strings, and the root braces
// may be left out. Duplicate keys in any object are refused, as DeepSpeed refuses them.
// Every value and key carries its line, for messages.
#pragma once
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
};

// Parses `text`; `source` names it in errors. Throws ConfigError "SOURCE:LINE: what".
JsonValue parse_hjson(const std::string& text, const std::string& source);

// "'abc'", "a JSON object", "an array", "null", "true": for "got ..." messages.
std::string describe_json(const JsonValue& v);

}  // namespace zt
