// Test-only helpers for the ds_config importer (train/deepspeed/deepspeed_import.h):
// import a JSON text and check that every warning or error is one line naming the file.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/deepspeed/deepspeed_import.h"

namespace zt {

inline size_t count_mentions(const std::vector<std::string>& warnings, const std::string& needle) {
  return size_t(std::count_if(warnings.begin(), warnings.end(), [&](const std::string& w) {
    return w.find(needle) != std::string::npos;
  }));
}

// Imports `json` over c at `world` ranks as `release`; returns the warnings.
inline std::vector<std::string> import(const std::string& json, int world, Config& c,
                                       DeepSpeedRelease release = kImportAssumedRelease) {
  TestFile file(json, "ds_config.json");
  std::vector<std::string> warnings;
  apply_deepspeed_config(file.path, c, warnings, world, nullptr, release);
  for (const std::string& w : warnings) {
    INFO(w);
    CHECK(w.find('\n') == std::string::npos);
    CHECK(w.rfind(file.path + ":", 0) == 0);
  }
  return warnings;
}

// The ConfigError importing `json` raises (the test fails when there is none).
inline std::string import_error(const std::string& json, int world, Config c) {
  TestFile file(json, "ds_config.json");
  std::vector<std::string> warnings;
  const std::string message =
      error_of<ConfigError>([&] { apply_deepspeed_config(file.path, c, warnings, world); });
  if (message.empty()) FAIL("no ConfigError for " << json);
  INFO(message);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.rfind(file.path + ":", 0) == 0);
  return message;
}

}  // namespace zt
