// Text generation from a model: temperature and top-k sampling, a window of the
// last seq_len tokens, a self-contained RNG so the same seed gives the same text.
#pragma once
#include <cstdint>
#include <vector>

#include "model/gpt.h"

namespace zt {

struct SampleSettings {
  int tokens = 200;
  double temperature = 0.8;
  int top_k = 40;
  uint64_t seed = 1;
};

// `model` must have been built with B >= 1 and T = seq_len. Returns the prompt
// followed by the generated tokens.
std::vector<int> sample_tokens(GPT& model, ModuleHooks& hooks, std::vector<int> prompt,
                               const SampleSettings& s);

}  // namespace zt
