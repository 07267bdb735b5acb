// Fixed-size fields of the binary files zerotrain writes (checkpoint rank
// files, snapshot regions): host byte order, which the formats pin to
// little-endian.
#pragma once
#include <cstring>
#include <string>

namespace zt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "zerotrain's binary files are little-endian");

template <typename T>
void put_field(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T get_field(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace zt
