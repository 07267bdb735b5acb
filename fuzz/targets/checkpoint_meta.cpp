// A checkpoint's meta.json and COMPLETE marker, from memory as
// read_checkpoint_meta parses them. What parse_meta accepts must encode and
// parse back to the same fields, or a resumed run would not read what it wrote.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "train/io/checkpoint_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  zt::fuzz::parse_or_reject([&] {
    const zt::CheckpointMeta meta = zt::parse_meta(text, "meta.json");
    const std::string encoded = zt::encode_meta(meta);
    if (zt::encode_meta(zt::parse_meta(encoded, "re-encoded meta.json")) != encoded)
      zt::fuzz::finding("meta.json does not survive encode_meta and parse_meta");
  });
  zt::fuzz::parse_or_reject([&] { (void)zt::parse_complete(text, "COMPLETE"); });
  return 0;
}
