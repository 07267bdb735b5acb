// train/config: boundaries of the cross-key rules, each at its exact edge
// (the rule's own error cases live in tests/unit/test_config.cpp). Each case names
// the mutants of tests/mutations.txt it catches.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"

using namespace zt;

namespace {

std::string config_error(const std::string& path) {
  return error_of([&] { load_config(path, {}); });
}

}  // namespace

// train-min-lr-equal-refused: the rule is min_lr <= lr, so min_lr == lr (a
// flat schedule after the warm-up) is a valid config.
TEST_CASE("config: train.min_lr equal to train.lr is accepted, one ulp above is not", "[config]") {
  std::mt19937_64 rng(test_seed() + 301);
  const double lr = std::ldexp(1.0 + double(rng() % 1000) / 1000, -10 - int(rng() % 5));
  char text[128];
  std::snprintf(text, sizeof text, "train:\n  lr: %.17g\n  min_lr: %.17g\n", lr, lr);
  TestFile same(text, "c.yaml");
  CHECK(config_error(same.path) == "");
  CHECK(load_config(same.path, {}).train.min_lr == load_config(same.path, {}).train.lr);
  std::snprintf(text, sizeof text, "train:\n  lr: %.17g\n  min_lr: %.17g\n", lr,
                std::nextafter(lr, 1.0));
  TestFile above(text, "c.yaml");
  CHECK(config_error(above.path).find("expected train.min_lr <= train.lr") != std::string::npos);
}
