// Small helpers shared by the test files.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "model/gpt_config.h"
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

// A GPT shape spelled out in one call (tests pick tiny shapes whose sums can be
// done by hand).
inline GPTConfig gpt_shape(int n_layer, int n_head, int n_embd, int vocab_size, int seq_len) {
  GPTConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.vocab_size = vocab_size;
  c.seq_len = seq_len;
  return c;
}

// Every part must occur in a one-line error message.
inline void require_parts(const std::string& message, const std::vector<std::string>& parts) {
  INFO("message: " << message);
  for (const std::string& part : parts) {
    INFO("expected part: " << part);
    CHECK(message.find(part) != std::string::npos);
  }
}

// A fresh directory under the system temp directory, removed with everything
// in it when the test ends.
struct TestDir {
  std::string path;
  explicit TestDir(const std::string& prefix = "zt_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    REQUIRE(::mkdtemp(&pattern[0]) != nullptr);
    path = pattern;
  }
  ~TestDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
};

// Sends stdout to a file while alive (commands run inside a test print a lot).
struct StdoutTo {
  int saved = -1;
  explicit StdoutTo(const std::string& path) {
    std::fflush(stdout);
    saved = ::dup(1);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    ::dup2(fd, 1);
    ::close(fd);
  }
  ~StdoutTo() {
    std::fflush(stdout);
    ::dup2(saved, 1);
    ::close(saved);
  }
  StdoutTo(const StdoutTo&) = delete;
  StdoutTo& operator=(const StdoutTo&) = delete;
};

// Ends the test process (SIGALRM) if the scope takes longer than `seconds`:
// a read that blocks (a FIFO) fails the run instead of hanging it.
struct HangGuard {
  explicit HangGuard(unsigned seconds) { ::alarm(seconds); }
  ~HangGuard() { ::alarm(0); }
};

}  // namespace zt
