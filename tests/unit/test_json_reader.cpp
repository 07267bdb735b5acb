// The one JSON reader: strict JSON as data files hold it (RFC 8259: no
// comments, no trailing commas, no lone surrogates), the Hjson additions
// DeepSpeed's loader accepts for ds_config files, duplicate keys refused, the
// line and column in messages.
#include <string>

#include "data/json_reader.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

JsonValue parse_hjson(const std::string& text, const std::string& source) {
  return parse_json(text, source, JsonDialect::Hjson);
}

std::string parse_error(const std::string& text, JsonDialect d = JsonDialect::Hjson) {
  const std::string message = error_of<JsonError>([&] { parse_json(text, "t.json", d); });
  if (message.empty()) FAIL("no JsonError for " << text);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.rfind("t.json:", 0) == 0);
  return message;
}

// A canonical text of a value, to compare two parses.
std::string dump(const JsonValue& v) {
  std::string out = std::to_string(int(v.kind)) + ":";
  if (v.kind == JsonValue::Kind::object) {
    for (const JsonMember& m : v.members) out += "{" + m.key + "=" + dump(m.value[0]) + "}";
  } else if (v.kind == JsonValue::Kind::array) {
    for (const JsonValue& item : v.items) out += "[" + dump(item) + "]";
  } else {
    out += v.text;
  }
  return out;
}

}  // namespace

TEST_CASE("strict JSON reads with kinds, text and lines", "[json]") {
  std::mt19937_64 rng(test_seed());
  const int64_t n = int64_t(rng() % 1000000000);
  JsonValue v = parse_hjson("{\n  \"a\": " + std::to_string(n) +
                                ",\n  \"b\": [true, null, -1.5e-3, \"x\\\"y\\u00e9\"],\n"
                                "  \"c\": {}\n}",
                            "t.json");
  REQUIRE(v.kind == JsonValue::Kind::object);
  REQUIRE(v.members.size() == 3);
  REQUIRE(v.members[0].line == 2);
  REQUIRE(v.find("a")->kind == JsonValue::Kind::number);
  REQUIRE(v.find("a")->text == std::to_string(n));
  const JsonValue& b = *v.find("b");
  REQUIRE(b.items.size() == 4);
  REQUIRE(b.items[0].kind == JsonValue::Kind::boolean);
  REQUIRE(b.items[1].kind == JsonValue::Kind::null);
  REQUIRE(b.items[2].text == "-1.5e-3");
  REQUIRE(b.items[3].text == "x\"y\xc3\xa9");
  REQUIRE(v.find("c")->kind == JsonValue::Kind::object);
  REQUIRE(v.find("missing") == nullptr);
}

TEST_CASE("Hjson as DeepSpeed reads it: comments, commas, unquoted keys, no root braces",
          "[json]") {
  const std::string strict =
      R"({"train_batch_size": 32, "zero_optimization": {"stage": 2, "overlap_comm": true,
          "reduce_bucket_size": 5e8}, "note": "a b, c", "list": [1, 2]})";
  const std::string hjson = R"(# a DeepSpeed config
// with every Hjson form DeepSpeed's loader takes
train_batch_size: 32
zero_optimization: {
  stage: 2         # newline instead of a comma
  'overlap_comm': true,  /* a block
  comment */
  "reduce_bucket_size": 5e8,   // trailing comma next
}
note: a b, c
list: [1, 2,]
)";
  REQUIRE(dump(parse_hjson(hjson, "t.json")) == dump(parse_hjson(strict, "t.json")));
  JsonValue multi = parse_hjson("{\n  text:\n    '''\n    one\n      two\n    '''\n}", "t.json");
  REQUIRE(multi.find("text")->text == "one\n  two");
  // A quoteless value is a literal only when nothing but a delimiter follows it.
  JsonValue q = parse_hjson("{a: 5 apples\nb: 5 # five\nc: true}", "t.json");
  REQUIRE(q.find("a")->kind == JsonValue::Kind::string);
  REQUIRE(q.find("a")->text == "5 apples");
  REQUIRE(q.find("b")->kind == JsonValue::Kind::number);
  REQUIRE(q.find("c")->kind == JsonValue::Kind::boolean);
}

TEST_CASE("duplicate keys are refused in every object, as DeepSpeed refuses them", "[json]") {
  require_parts(parse_error("{\n  \"stage\": 1,\n  \"stage\": 2\n}"),
                {"t.json:3:", "key 'stage'", "duplicate key"});
  require_parts(parse_error("{\"a\": 1, \"a\": 1}", JsonDialect::Strict),
                {"key 'a': duplicate key"});
  require_parts(parse_error("{\"zero_optimization\": {\n \"stage\": 1,\n \"stage\": 2}}"),
                {"t.json:3:", "key 'zero_optimization.stage'", "duplicate"});
  REQUIRE(parse_hjson("{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}", "t.json").members.size() == 2);
}

TEST_CASE("Hjson syntax errors name the line", "[json]") {
  require_parts(parse_error("{\n  \"a\": \"open\n}"), {"t.json:2:", "unterminated string"});
  require_parts(parse_error("{\n  \"a\" 1\n}"), {"t.json:2:", "expected ':' after key 'a'"});
  require_parts(parse_error("{\n  \"a\": {\"b\": 1\n"), {"expected '}'", "'a'"});
  require_parts(parse_error("{\"a\": [1, 2\n"), {"expected ']'"});
  require_parts(parse_error("{\"a\": 1,, \"b\": 2}"), {"expected a key, got ','"});
  require_parts(parse_error("/* open"), {"unterminated /* comment"});
  require_parts(parse_error(""), {"empty file"});
  require_parts(parse_error("{\"a\": 1} x"), {"after the end"});
  require_parts(parse_error(std::string(100, '[')), {"nested deeper"});
}

TEST_CASE("strict JSON: the RFC's rules, errors at their line and column", "[json]") {
  const JsonDialect strict = JsonDialect::Strict;
  const JsonValue v = parse_json(
      R"( {"a": [1, -0.5e3, true, false, null, {}], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "a2": []} )",
      "t.json", strict);
  REQUIRE(v.kind == JsonValue::Kind::object);
  const JsonValue& a = *v.find("a");
  REQUIRE(a.items.size() == 6);
  CHECK(a.items[1].number() == -500);
  CHECK(a.items[2].kind == JsonValue::Kind::boolean);
  CHECK(a.items[4].kind == JsonValue::Kind::null);
  CHECK(v.find("s")->text == "x\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
  CHECK(v.find("a2")->items.empty());
  // JSONL: the caller numbers the line.
  require_parts(parse_error("{\"a\": 1,}", strict), {"t.json:1:9:", "trailing ','"});
  try {
    parse_json("[1 2]", "data.jsonl", strict, 7);
    FAIL("accepted [1 2]");
  } catch (const JsonError& e) {
    CHECK(std::string(e.what()) ==
          "data.jsonl:7:4: JSON syntax error: expected ',' or ']', got '2'");
  }
  require_parts(parse_error("[1, 2,]", strict), {":1:7:", "trailing ',' before ']'"});
  require_parts(parse_error("{\"a\" 1}", strict), {":1:6:", "expected ':' after key 'a'"});
  require_parts(parse_error("tru", strict), {"expected a value, got 'tru'"});
  require_parts(parse_error("01", strict), {"expected a value, got '01'"});
  require_parts(parse_error("\"abc", strict), {"unterminated string"});
  require_parts(parse_error("\"a\tb\"", strict), {":1:3:", "control character inside a string"});
  require_parts(parse_error("\"\\ud800x\"", strict), {"a high surrogate without its low half"});
  require_parts(parse_error("\"\\udc00\"", strict), {"a lone low surrogate"});
  require_parts(parse_error("\"ab\\q\"", strict), {"unknown escape '\\q'"});
  require_parts(parse_error("{} {}", strict), {":1:4:", "after the end"});
  require_parts(parse_error("{a: 1}", strict), {"expected a double-quoted key"});
  require_parts(parse_error("{\"a\": 1} // note", strict), {"after the end"});
  require_parts(parse_error("{\"a\": 'x'}", strict), {"expected a value, got ''x''"});
  require_parts(parse_error(std::string(100, '['), strict),
                {":1:66:", "nested deeper than 64 levels"});
}

TEST_CASE("messages quote a decoded string's control bytes as \\xNN, keeping one line", "[json]") {
  const JsonDialect strict = JsonDialect::Strict;
  // Found by fuzz/targets/cluster_description: a key holding "\n" split the message.
  require_parts(parse_error("{\"a\\nb\" 1}", strict), {"expected ':' after key 'a\\x0ab'"});
  require_parts(parse_error("{\"k\\r\": 1, \"k\\r\": 2}", strict), {"key 'k\\x0d': duplicate key"});
  require_parts(parse_error("{a: 'x\\\n'}"), {"unknown escape '\\\\x0a'"});
  CHECK(describe_json(parse_json("\"line\\none\\u001b\"", "t.json", strict)) ==
        "'line\\x0aone\\x1b'");
}

}  // namespace zt
