#include "train/io/host_identity.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace zt {
namespace {

// The value after the first "KEY<spaces or tabs>:" line of a text file, trimmed; "" if none.
std::string field_of(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || line.compare(0, key.size(), key) != 0) continue;
    if (line.find_first_not_of(" \t", key.size()) != colon) continue;
    const size_t b = line.find_first_not_of(" \t", colon + 1);
    const size_t e = line.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : line.substr(b, e - b + 1);
  }
  return "";
}

// /proc/driver/nvidia/gpus/<bus id>/information, the lowest bus id first.
std::string first_nvidia_gpu() {
  std::error_code ec;
  std::vector<std::filesystem::path> gpus;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec))
    gpus.push_back(e.path());
  std::sort(gpus.begin(), gpus.end());
  return gpus.empty() ? "" : field_of((gpus.front() / "information").string(), "Model");
}

}  // namespace

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

JsonObject host_identity_json() {
  return JsonObject()
      .add("name", host_name())
      .add("cpu", field_of("/proc/cpuinfo", "model name"))
      .add("gpu", first_nvidia_gpu());
}

}  // namespace zt
