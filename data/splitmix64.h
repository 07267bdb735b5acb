// splitmix64 (Steele, Lea, Flood 2014): a tiny generator with a fixed,
// documented output, so shuffles, initial weights and samples are the same
// with every standard library (std:: distributions are not).
#pragma once
#include <cstdint>

namespace zt {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ULL); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }
  // Uniform in [0, bound): rejecting the lowest 2^64 mod bound outputs leaves
  // a range that is a whole multiple of bound, so the modulo is unbiased.
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  uint64_t state_;
};

}  // namespace zt
