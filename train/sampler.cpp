#include "train/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "data/splitmix64.h"

namespace zt {

std::vector<int> sample_tokens(GPT& model, ModuleHooks& hooks, std::vector<int> tokens,
                               const SampleSettings& s) {
  SplitMix64 rng(s.seed);
  if (tokens.empty()) tokens.push_back(0);
  const int window = model.T();
  for (int i = 0; i < s.tokens; i++) {
    const int start = std::max(0, static_cast<int>(tokens.size()) - window);
    const int t = static_cast<int>(tokens.size()) - start;
    std::vector<float> logits = model.forward_logits(tokens.data() + start, 1, t, t - 1, hooks);
    const int V = static_cast<int>(logits.size());
    std::vector<int> idx(V);
    std::iota(idx.begin(), idx.end(), 0);
    const int k = s.top_k > 0 ? std::min(s.top_k, V) : V;
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    std::vector<double> p(k);
    double sum = 0;
    for (int j = 0; j < k; j++) {
      p[j] = std::exp((logits[idx[j]] - logits[idx[0]]) / s.temperature);
      sum += p[j];
    }
    double u = rng.uniform() * sum;
    int pick = idx[k - 1];
    for (int j = 0; j < k; j++) {
      if ((u -= p[j]) <= 0) {
        pick = idx[j];
        break;
      }
    }
    tokens.push_back(pick);
  }
  return tokens;
}

}  // namespace zt
