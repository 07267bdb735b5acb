#include "data/hellaswag_file.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "data/input/input_file.h"
#include "data/json_reader.h"
#include "data/shard.h"

namespace zt {
namespace {

constexpr size_t kMaxFileBytes = size_t(256) << 20;

const JsonValue& member(const JsonValue& object, const std::string& key, const std::string& where) {
  const JsonValue* v = object.find(key);
  if (!v) throw DataError(where + "no key '" + key + "'");
  return *v;
}

}  // namespace

std::vector<HellaswagExample> read_hellaswag(const std::string& path) {
  const std::string problem = input_path_problem(path);
  if (problem == kInputAbsent)
    throw DataError(path + ": no such HellaSwag file (expected hellaswag_val.jsonl's format)");
  if (!problem.empty()) throw DataError(path + ": the HellaSwag file " + problem);
  const InputFile file(path, "HellaSwag file");
  if (file.size() > kMaxFileBytes)
    throw DataError(
        path + ": " + std::to_string(file.size()) +
        " bytes; a HellaSwag file over 256 MiB is refused (the validation set is 11 MB)");
  std::istringstream in(file.read_all(kMaxFileBytes));
  std::vector<HellaswagExample> examples;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    JsonValue v;
    try {
      v = parse_json(line, path, JsonDialect::Strict, line_no);
    } catch (const JsonError& e) {
      throw DataError(e.what());
    }
    if (v.kind != JsonValue::Kind::object)
      throw DataError(where + "expected an object, got " + describe_json(v));
    HellaswagExample ex;
    ex.line = line_no;
    const JsonValue& ctx = member(v, "ctx", where);
    if (ctx.kind != JsonValue::Kind::string || ctx.text.empty())
      throw DataError(where + "key 'ctx': expected a non-empty string, got " +
                      (ctx.kind == JsonValue::Kind::string ? "an empty one" : describe_json(ctx)));
    ex.context = ctx.text;
    const JsonValue& endings = member(v, "endings", where);
    if (endings.kind != JsonValue::Kind::array || endings.items.size() != 4)
      throw DataError(where + "key 'endings': expected an array of 4 strings, got " +
                      describe_json(endings));
    for (size_t k = 0; k < 4; ++k) {
      const JsonValue& e = endings.items[k];
      if (e.kind != JsonValue::Kind::string || e.text.empty())
        throw DataError(where + "key 'endings': item " + std::to_string(k) +
                        ": expected a non-empty string, got " +
                        (e.kind == JsonValue::Kind::string ? "an empty one" : describe_json(e)));
      ex.endings[k] = e.text;
    }
    // An integer as in the original release, or "0".."3" as in Hugging Face's copy.
    const JsonValue& label = member(v, "label", where);
    const double n = label.kind == JsonValue::Kind::number ? label.number() : -1;
    const bool number = n == std::floor(n) && n >= 0 && n <= 3;
    const bool digit = label.kind == JsonValue::Kind::string && label.text.size() == 1 &&
                       label.text[0] >= '0' && label.text[0] <= '3';
    if (!number && !digit)
      throw DataError(where + "key 'label': expected an integer in 0..3, got " +
                      (label.kind == JsonValue::Kind::string ? "'" + label.text.substr(0, 20) + "'"
                                                             : describe_json(label)));
    ex.label = number ? int(n) : label.text[0] - '0';
    examples.push_back(std::move(ex));
  }
  if (in.bad()) throw DataError(path + ": read error");
  if (examples.empty()) throw DataError(path + ": no HellaSwag examples in the file");
  return examples;
}

}  // namespace zt
