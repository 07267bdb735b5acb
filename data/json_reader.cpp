// JSON and Hjson reader (see json_reader.h). Recursive descent over the text,
// one character of look-ahead. Hjson's quoteless values: a value that holds
// exactly a number, true, false or null (before a comma, a closing bracket or a
// comment) is that literal, anything else up to the end of the line is a
// string. Strict JSON allows only the literals.
#include "data/json_reader.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "data/input/escape_control.h"

namespace zt {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const std::string& text, const std::string& source, JsonDialect d, int first_line)
      : s_(text), source_(source), hjson_(d == JsonDialect::Hjson), line_(first_line) {}

  JsonValue parse_root() {
    skip_space();
    if (done()) fail(hjson_ ? "expected a JSON object, got an empty file" : "expected a value");
    JsonValue root = hjson_ && peek() != '{' && peek() != '[' && looks_like_member()
                         ? parse_members(0, "", /*braced=*/false)
                         : parse_value(0, "");
    skip_space();
    if (!done()) fail(std::string("unexpected '") + peek() + "' after the end of the document");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError(source_ + ":" + std::to_string(line_) + ":" + std::to_string(column()) +
                        ": JSON syntax error: " + escape_control_bytes(what),
                    false);
  }
  int column() const {
    const size_t start = pos_ == 0 ? std::string::npos : s_.rfind('\n', pos_ - 1);
    return static_cast<int>(pos_ - (start == std::string::npos ? 0 : start + 1)) + 1;
  }
  bool done() const { return pos_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  char next() {
    char ch = s_[pos_++];
    if (ch == '\n') line_++;
    return ch;
  }

  // Whitespace, and in Hjson comments; newlines too unless `stop_at_newline`.
  void skip_space(bool stop_at_newline = false) {
    while (!done()) {
      char ch = peek();
      if (ch == '\n' && stop_at_newline) return;
      if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
        next();
      } else if (hjson_ && (ch == '#' || (ch == '/' && peek(1) == '/'))) {
        while (!done() && peek() != '\n') next();
      } else if (hjson_ && ch == '/' && peek(1) == '*') {
        const int start = line_;
        next(), next();
        while (!done() && !(peek() == '*' && peek(1) == '/')) next();
        if (done()) {
          line_ = start;
          fail("unterminated /* comment");
        }
        next(), next();
      } else {
        return;
      }
    }
  }

  // Whether the text at pos_ reads "key:" (a braceless Hjson root object).
  bool looks_like_member() const {
    size_t p = pos_;
    if (p < s_.size() && (s_[p] == '"' || s_[p] == '\'')) return true;
    while (p < s_.size() && !std::isspace(static_cast<unsigned char>(s_[p])) &&
           std::string(",:[]{}").find(s_[p]) == std::string::npos)
      p++;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) p++;
    return p < s_.size() && s_[p] == ':';
  }

  JsonValue parse_value(int depth, const std::string& path) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_space();
    if (done()) fail("expected a value, got the end of the text");
    const char ch = peek();
    if (ch == '{') {
      next();
      return parse_members(depth, path, /*braced=*/true);
    }
    if (ch == '[') return parse_array(depth, path);
    if (ch == '"' || (hjson_ && ch == '\'')) {
      JsonValue v;
      v.line = line_;
      v.kind = JsonValue::Kind::string;
      v.text =
          (ch == '\'' && peek(1) == '\'' && peek(2) == '\'') ? parse_multiline() : parse_quoted();
      return v;
    }
    if (ch == ',' || ch == ':' || ch == ']' || ch == '}')
      fail(std::string("expected a value, got '") + ch + "'");
    return parse_literal();
  }

  // After an item: ',' (one, and in strict JSON not before the closing bracket),
  // or in Hjson nothing.
  void separator(char close, const char* item) {
    skip_space();
    if (peek() == ',') {
      next();
      skip_space();
      if (peek() == ',') fail(std::string("expected ") + item + ", got ','");
      if (!hjson_ && peek() == close) fail(std::string("trailing ',' before '") + close + "'");
    } else if (!hjson_ && !done() && peek() != close) {
      fail(std::string("expected ',' or '") + close + "', got '" + peek() + "'");
    }
  }

  JsonValue parse_members(int depth, const std::string& path, bool braced) {
    JsonValue obj;
    obj.kind = JsonValue::Kind::object;
    obj.line = line_;
    std::set<std::string> seen;
    for (;;) {
      skip_space();
      if (done()) {
        if (braced) fail("expected '}' to close the object" + where(path));
        return obj;
      }
      if (peek() == '}') {
        if (!braced) fail("unexpected '}'");
        next();
        return obj;
      }
      JsonMember m;
      m.line = line_;
      m.key = parse_key();
      skip_space(hjson_);
      if (peek() != ':') fail("expected ':' after key '" + m.key + "'");
      next();
      const std::string child = path.empty() ? m.key : path + "." + m.key;
      if (!seen.insert(m.key).second)
        throw JsonError(source_ + ":" + std::to_string(m.line) + ": key '" +
                            escape_control_bytes(child) + "': duplicate key",
                        true);
      m.value.push_back(parse_value(depth + 1, child));
      obj.members.push_back(std::move(m));
      separator('}', "a key");
    }
  }

  JsonValue parse_array(int depth, const std::string& path) {
    JsonValue arr;
    arr.kind = JsonValue::Kind::array;
    arr.line = line_;
    next();  // '['
    for (;;) {
      skip_space();
      if (done()) fail("expected ']' to close the array" + where(path));
      if (peek() == ']') {
        next();
        return arr;
      }
      arr.items.push_back(parse_value(depth + 1, path));
      separator(']', "a value");
    }
  }

  static std::string where(const std::string& path) {
    return path.empty() ? "" : " of '" + path + "'";
  }

  std::string parse_key() {
    if (peek() == '"' || (hjson_ && peek() == '\'')) return parse_quoted();
    if (!hjson_) fail(std::string("expected a double-quoted key, got '") + peek() + "'");
    std::string key;
    while (!done() && !std::isspace(static_cast<unsigned char>(peek())) &&
           std::string(",:[]{}").find(peek()) == std::string::npos)
      key += next();
    if (key.empty()) fail(std::string("expected a key, got '") + peek() + "'");
    return key;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  uint32_t parse_hex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
      const char h = done() ? '\0' : next();
      if (!std::isxdigit(static_cast<unsigned char>(h))) fail("expected 4 hex digits after \\u");
      v = v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h))
                                ? h - '0'
                                : (std::tolower(h) - 'a' + 10));
    }
    return v;
  }

  std::string parse_quoted() {
    const char quote = next();
    const int start = line_;
    std::string out;
    for (;;) {
      if (done() || peek() == '\n') {
        line_ = start;
        fail("unterminated string");
      }
      const char ch = next();
      if (ch == quote) return out;
      if (!hjson_ && static_cast<unsigned char>(ch) < 0x20) {
        pos_--;
        fail("control character inside a string");
      }
      if (ch != '\\') {
        out += ch;
        continue;
      }
      const char esc = done() ? '\0' : next();
      switch (esc) {
        case '"': out += '"'; break;
        case '\'':
          if (!hjson_) fail("unknown escape '\\''");
          out += '\'';
          break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = parse_hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (peek() != '\\' || peek(1) != 'u')
              fail("\\u escape: a high surrogate without its low half");
            next(), next();
            const uint32_t low = parse_hex4();
            if (low < 0xDC00 || low >= 0xE000)
              fail("\\u escape: a high surrogate without its low half");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("\\u escape: a lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape '\\") + esc + "' in a string");
      }
    }
  }

  // '''text''': the lines as written, the first line's indentation removed from each.
  std::string parse_multiline() {
    const size_t line_start = s_.rfind('\n', pos_);
    const size_t indent = pos_ - (line_start == std::string::npos ? 0 : line_start + 1);
    const int start = line_;
    next(), next(), next();
    std::string raw;
    while (!(peek() == '\'' && peek(1) == '\'' && peek(2) == '\'')) {
      if (done()) {
        line_ = start;
        fail("unterminated ''' string");
      }
      raw += next();
    }
    next(), next(), next();
    if (!raw.empty() && raw.find_first_not_of(" \t") == raw.find('\n'))
      raw.erase(0, raw.find('\n') + 1);  // the text starts on the line after '''
    std::string out;
    size_t i = 0;
    while (i <= raw.size()) {
      const size_t end = raw.find('\n', i);
      std::string piece = raw.substr(i, end == std::string::npos ? std::string::npos : end - i);
      size_t skip = 0;
      while (skip < indent && skip < piece.size() && (piece[skip] == ' ' || piece[skip] == '\t'))
        skip++;
      out += piece.substr(skip);
      if (end == std::string::npos) break;
      out += '\n';
      i = end + 1;
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  static bool is_json_number(const std::string& t) {
    size_t i = 0;
    const size_t n = t.size();
    if (i < n && t[i] == '-') i++;
    const size_t digits = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(t[i]))) i++;
    if (i == digits || (t[digits] == '0' && i - digits > 1)) return false;
    if (i < n && t[i] == '.') {
      const size_t frac = ++i;
      while (i < n && std::isdigit(static_cast<unsigned char>(t[i]))) i++;
      if (i == frac) return false;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
      i++;
      if (i < n && (t[i] == '+' || t[i] == '-')) i++;
      const size_t exp = i;
      while (i < n && std::isdigit(static_cast<unsigned char>(t[i]))) i++;
      if (i == exp) return false;
    }
    return i == n;
  }

  JsonValue parse_literal() {
    JsonValue v;
    v.line = line_;
    // The token up to a delimiter; a literal if only space (or in Hjson a
    // comment) follows on the line.
    size_t end = pos_;
    while (end < s_.size() && std::string(",:]}\n\r\t #/").find(s_[end]) == std::string::npos)
      end++;
    const std::string token = s_.substr(pos_, end - pos_);
    size_t after = end;
    while (after < s_.size() && (s_[after] == ' ' || s_[after] == '\t' || s_[after] == '\r'))
      after++;
    const bool delimited =
        after >= s_.size() ||
        std::string(hjson_ ? ",]}\n#" : ",]}\n").find(s_[after]) != std::string::npos ||
        (hjson_ && s_[after] == '/' && after + 1 < s_.size() &&
         (s_[after + 1] == '/' || s_[after + 1] == '*'));
    if (delimited || !hjson_) {
      if (token == "true" || token == "false") v.kind = JsonValue::Kind::boolean;
      else if (token == "null") v.kind = JsonValue::Kind::null;
      else if (is_json_number(token)) {
        // JSON's grammar has no bound; ours is a double's, so 1e400 never reads as inf.
        if (!std::isfinite(std::strtod(token.c_str(), nullptr)))
          fail("number " + token.substr(0, 24) + " is beyond the range of a double");
        v.kind = JsonValue::Kind::number;
      } else if (!hjson_) fail("expected a value, got '" + token.substr(0, 20) + "'");
      if (v.kind != JsonValue::Kind::null || token == "null") {
        v.text = token;
        while (pos_ < end) next();
        return v;
      }
    }
    // A quoteless string: the rest of the line, trailing space removed (comments
    // included, as Hjson reads them).
    std::string text;
    while (!done() && peek() != '\n') text += next();
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    v.kind = JsonValue::Kind::string;
    v.text = text;
    return v;
  }

  const std::string& s_;
  const std::string& source_;
  bool hjson_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const JsonMember& m : members)
    if (m.key == key) return &m.value[0];
  return nullptr;
}

double JsonValue::number() const { return std::strtod(text.c_str(), nullptr); }

JsonValue parse_json(const std::string& text, const std::string& source, JsonDialect dialect,
                     int first_line) {
  return Parser(text, source, dialect, first_line).parse_root();
}

std::string describe_json(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::null: return "null";
    case JsonValue::Kind::object: return "a JSON object";
    case JsonValue::Kind::array: return "an array of " + std::to_string(v.items.size());
    case JsonValue::Kind::string: return "'" + escape_control_bytes(v.text) + "'";
    default: return v.text;
  }
}

}  // namespace zt
