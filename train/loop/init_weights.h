// GPT-2 initialisation of the whole flat layout (fp32, host), a pure function of
// the seed: N(0, 0.02) weights, residual projections scaled by 1/sqrt(2 L),
// zero biases, unit LayerNorm gains. It is the training run's initial state
// (besides a checkpoint or a model file), drawn from the same generator as the
// data order and the samples.
#pragma once
#include <cstdint>

#include "model/param_table.h"

namespace zt {

void init_gpt2_weights(const ParamTable& table, uint64_t seed, float* out);

}  // namespace zt
