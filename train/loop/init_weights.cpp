// GPT-2 weight initialisation (init_weights.h), written with a self-contained generator so the
// same seed gives the same weights under any C++ standard library.
#include "train/loop/init_weights.h"

#include <cmath>
#include <cstdint>

#include "data/splitmix64.h"

namespace zt {
namespace {

// Box-Muller over two uniforms in (0, 1].
double normal(SplitMix64& rng) {
  double u1 = (static_cast<double>(rng.next() >> 11) + 1.0) / 9007199254740993.0;
  double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

void init_gpt2_weights(const ParamTable& table, uint64_t seed, float* out) {
  const double resid_std = 0.02 / std::sqrt(2.0 * table.config().n_layer);
  for (size_t i = 0; i < table.params().size(); i++) {
    const ParamInfo& p = table.params()[i];
    float* w = out + p.offset;
    const bool is_ln = p.name.find("ln_") != std::string::npos;
    const bool is_bias = p.name.size() > 5 && p.name.compare(p.name.size() - 5, 5, ".bias") == 0;
    if (is_ln && !is_bias) {
      for (size_t j = 0; j < p.numel; j++) w[j] = 1.0f;
    } else if (is_bias) {
      for (size_t j = 0; j < p.numel; j++) w[j] = 0.0f;
    } else {
      const bool resid = p.name.find("c_proj.weight") != std::string::npos;
      const double std = resid ? resid_std : 0.02;
      // One stream per tensor keeps tensors independent of each other's sizes.
      SplitMix64 rng(seed * 0x100000001B3ull + i);
      for (size_t j = 0; j < p.numel; j++) w[j] = static_cast<float>(normal(rng) * std);
    }
  }
}

}  // namespace zt
