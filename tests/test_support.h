// Small helpers shared by the test files.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/catch.h"

namespace zt {

// One random seed per test process, printed once so a failure can be replayed
// with ZT_TEST_SEED=N.
inline uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("ZT_TEST_SEED");
    std::random_device entropy;
    const uint64_t s = env ? std::strtoull(env, nullptr, 10)
                           : (static_cast<uint64_t>(entropy()) << 32) ^ entropy();
    std::printf("[tests] seed %llu (replay with ZT_TEST_SEED=%llu)\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// Every part must occur in a one-line error message.
inline void require_parts(const std::string& message, const std::vector<std::string>& parts) {
  INFO("message: " << message);
  for (const std::string& part : parts) {
    INFO("expected part: " << part);
    CHECK(message.find(part) != std::string::npos);
  }
}

}  // namespace zt
