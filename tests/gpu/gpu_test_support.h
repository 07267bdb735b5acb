// Shared by the [gpu] tests: whether a usable CUDA device is here (the reason
// printed once when not), the skip that makes a test pass without one, and
// the fresh random inputs that the multi-rank tests share across ranks.
#pragma once
#include <mpi.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "train/loop/init_weights.h"

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

// A seed drawn afresh every run and broadcast from rank 0, so that every rank
// draws the same weights and tokens.
inline unsigned rank0_seed() {
  unsigned seed = std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
  return seed;
}

// GPT-2's initial weights with every value moved by up to 0.05: biases and
// LayerNorms off their start (zero and one), so that a bias added on every
// shard or a LayerNorm gradient left partial changes the result.
inline std::vector<float> jittered_gpt2_weights(const ParamTable& table, std::mt19937& rng) {
  std::vector<float> w(table.total());
  init_gpt2_weights(table, rng(), w.data());
  std::uniform_real_distribution<float> jitter(-0.05f, 0.05f);
  for (float& x : w) x += jitter(rng);
  return w;
}

// n tokens below `vocab`.
inline std::vector<int> random_tokens(size_t n, int vocab, std::mt19937& rng) {
  std::vector<int> out(n);
  for (int& t : out) t = static_cast<int>(rng() % static_cast<unsigned>(vocab));
  return out;
}

}  // namespace zt
