// Shared by the [gpu] tests: whether a usable CUDA device is here (the reason
// printed once when not), and the skip that makes a test pass without one.
#pragma once
#include <cstdio>
#include <string>

#include "model/ops.h"
#include "tests/support/catch.h"

namespace zt {

inline bool no_gpu() {
  static std::string why;
  static const bool available = cuda_available(&why);
  static bool printed = false;
  if (!available && !printed) {
    std::printf("SKIPPED [gpu]: %s\n", why.c_str());
    printed = true;
  }
  return !available;
}

#define SKIP_WITHOUT_GPU()            \
  if (no_gpu()) {                     \
    SUCCEED("no usable CUDA device"); \
    return;                           \
  }

}  // namespace zt
