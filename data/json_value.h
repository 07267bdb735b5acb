// A strict JSON (RFC 8259) reader for one value per line, as JSONL files hold
// them: objects, arrays, strings (escapes and surrogate pairs decoded to
// UTF-8), numbers, true, false, null. Small on purpose: it reads data files
// such as HellaSwag's, it is not a general JSON library.
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // kString: the decoded string; kNumber: the number as written
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;  // a repeated key keeps its last value

  // "an object", "a string", ...: for "expected X, got Y" messages.
  std::string describe() const;
};

// Why a text is not JSON, and the 1-based column where that was seen.
struct JsonSyntaxError : std::runtime_error {
  JsonSyntaxError(size_t column, const std::string& what)
      : std::runtime_error(what), column(column) {}
  size_t column;
};

// Parses exactly one value (surrounding whitespace allowed); throws
// JsonSyntaxError. Nesting deeper than 64 levels is refused.
JsonValue parse_json(std::string_view text);

}  // namespace zt
