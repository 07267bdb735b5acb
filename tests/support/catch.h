// Catch2 v2 (one header, Debian 12) or v3 (a library, Ubuntu 24.04): one include.
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#include <string>
// The tests are written against v2's names; v3 moved two of them.
using Catch::Approx;
namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text) {
  return Matchers::ContainsSubstring(text);
}
}  // namespace Catch
#else
#include <catch2/catch.hpp>
#endif
