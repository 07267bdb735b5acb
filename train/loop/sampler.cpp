#include "train/loop/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>

namespace zt {

std::vector<int> generate_tokens(std::vector<int> tokens, const SampleSettings& s, int window_size,
                                 const NextToken& next) {
  SplitMix64 rng(s.seed);
  if (tokens.empty()) tokens.push_back(0);
  for (int i = 0; i < s.tokens; i++) {
    const int start = std::max(0, static_cast<int>(tokens.size()) - window_size);
    tokens.push_back(next(tokens.data() + start, static_cast<int>(tokens.size()) - start, rng));
  }
  return tokens;
}

std::vector<int> sample_tokens(GPT& model, ModuleHooks& hooks, std::vector<int> prompt,
                               const SampleSettings& s) {
  return generate_tokens(
      std::move(prompt), s, model.T(), [&](const int* window, int t, SplitMix64& rng) {
        return pick_token(model.forward_logits(window, 1, t, t - 1, hooks), s, rng);
      });
}

int pick_token(const std::vector<float>& logits, const SampleSettings& s, SplitMix64& rng) {
  const int V = s.vocab_limit > 0 ? std::min(s.vocab_limit, static_cast<int>(logits.size()))
                                  : static_cast<int>(logits.size());
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
  for (int j = 0; j < k; j++)
    if ((u -= p[j]) <= 0) return idx[j];
  return idx[k - 1];
}

std::vector<int> sample_prompt(const Tokenizer& tokenizer, const std::string& prompt) {
  if (tokenizer.eot_id() < 0) return tokenizer.encode(prompt.empty() ? "\n" : prompt);
  std::vector<int> tokens{tokenizer.eot_id()};
  if (!prompt.empty()) {
    const std::vector<int> text = tokenizer.encode(prompt);
    tokens.insert(tokens.end(), text.begin(), text.end());
  }
  return tokens;
}

std::string sample_text(const Tokenizer& tokenizer, const std::vector<int>& tokens) {
  const bool skip = !tokens.empty() && tokenizer.eot_id() >= 0 && tokens[0] == tokenizer.eot_id();
  return printable_utf8(tokenizer.decode(std::vector<int>(tokens.begin() + skip, tokens.end())));
}

}  // namespace zt
