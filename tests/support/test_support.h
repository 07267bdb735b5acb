// Small helpers shared by the test files.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/gpt_config.h"
#include "tests/support/catch.h"

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

// A random stream of its own for each salt, all derived from the run's seed.
inline std::mt19937_64 test_rng(uint64_t salt) {
  return std::mt19937_64(test_seed() + 0x9E3779B97F4A7C15ull * salt);
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

// The [expected] tests' model, small enough to sum by hand: n_layer 1, n_head 1,
// n_embd 3, vocab 5, seq_len 2 (16 tensors, 174 elements).
inline GPTConfig hand_sized_shape() { return gpt_shape(1, 1, 3, 5, 2); }

// The message of the exception of type E that `f` throws, or "" when it throws
// none (any other exception fails the test).
template <typename E = std::exception, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
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

// `bytes` as the whole content of `path`, its folders created as needed.
inline void write_file(const std::string& path, const std::string& bytes) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The whole content of `path` ("" if it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file holding `text` (named `name`, in a fresh TestDir), removed with its
// directory when the test ends.
struct TestFile {
  TestDir dir;
  std::string path;
  explicit TestFile(const std::string& text, const std::string& name = "file")
      : path(dir.file(name)) {
    write_file(path, text);
  }
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
