#include "fuzz/support/scratch_file.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace zt::fuzz {
namespace {

void remove_scratch_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(scratch_dir(), ignored);
}

// ZT_FUZZ_SCRATCH names the directory when set (fuzz/run.sh sets it, so that
// file names in error messages, which libFuzzer's comparison tracing feeds
// back into mutations, are the same from run to run); else a fresh one.
std::string make_scratch_dir() {
  const char* fixed = std::getenv("ZT_FUZZ_SCRATCH");
  if (fixed && *fixed) {
    std::error_code error;
    std::filesystem::create_directories(fixed, error);
    if (error) {
      std::fprintf(stderr, "zt-fuzz: cannot create %s: %s\n", fixed, error.message().c_str());
      std::abort();
    }
    return fixed;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/zt-fuzz-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror("zt-fuzz: mkdtemp");
    std::abort();
  }
  return pattern;
}

}  // namespace

const std::string& scratch_dir() {
  // Never destroyed: the exit handler that removes the directory reads it.
  static const std::string* dir = [] {
    const std::string* d = new std::string(make_scratch_dir());
    std::atexit(remove_scratch_dir);
    return d;
  }();
  return *dir;
}

std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(("zt-fuzz: writing " + path).c_str());
    std::abort();
  }
  return path;
}

std::string write_scratch(const std::string& name, const std::string& bytes) {
  return write_scratch(name, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace zt::fuzz
