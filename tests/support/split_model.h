// What the tensor- and sequence-parallel [mpi] tests share: a model that
// every world of the [mpi] runs (1..4) splits, and how far a shard's result
// is from the whole model's.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/gpt_config.h"

namespace zt {

// 12 heads and 96 vocabulary rows: divisible by W = 1..4.
inline GPTConfig divisible_model(int seq_len) {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 12;
  c.n_embd = 48;
  c.vocab_size = 96;
  c.seq_len = seq_len;
  return c;
}

// The largest absolute difference over the largest magnitude of `want`.
inline double worst_relative(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); i++) {
    worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
  }
  return worst / scale;
}

}  // namespace zt
