// data/json_reader.cpp, from memory: the first byte picks the dialect (odd:
// Hjson, as ds_configs are read; even: strict JSON, as data files are), the
// rest is the document. Every number is read back as the readers do.
#include "data/json_reader.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"

namespace {

void read_numbers(const zt::JsonValue& v) {
  if (v.kind == zt::JsonValue::Kind::number) (void)v.number();
  for (const zt::JsonMember& m : v.members) read_numbers(m.value.front());
  for (const zt::JsonValue& item : v.items) read_numbers(item);
  (void)zt::describe_json(v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const zt::JsonDialect dialect = data[0] & 1 ? zt::JsonDialect::Hjson : zt::JsonDialect::Strict;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  zt::fuzz::parse_or_reject([&] { read_numbers(zt::parse_json(text, "fuzz.json", dialect)); });
  return 0;
}
