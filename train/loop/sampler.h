// Text generation from a model: temperature and top-k sampling, a window of the
// last seq_len tokens, a self-contained RNG so the same seed gives the same text.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/splitmix64.h"
#include "data/tokenizer.h"
#include "model/gpt.h"

namespace zt {

struct SampleSettings {
  int tokens = 200;
  double temperature = 0.8;
  int top_k = 40;
  uint64_t seed = 1;
  // Only ids below this are drawn (the tokenizer's vocabulary: GPT-2's 50257
  // of a model padded to 50304); 0 means the model's whole vocabulary.
  int vocab_limit = 0;
};

// The tokens a sample starts from. With an end-of-text token (GPT-2), a
// sample is the start of a document as in training: that token, then the
// prompt. Without one, the prompt, or "\n" when it is empty.
std::vector<int> sample_prompt(const Tokenizer& tokenizer, const std::string& prompt);
// A sample as text for the terminal, without the leading end-of-text token
// that sample_prompt put there.
std::string sample_text(const Tokenizer& tokenizer, const std::vector<int>& tokens);

// `model` must have been built with B >= 1 and T = seq_len. Returns the prompt
// followed by the generated tokens.
std::vector<int> sample_tokens(GPT& model, ModuleHooks& hooks, std::vector<int> prompt,
                               const SampleSettings& s);

// The token after `window`'s t tokens, drawn with `rng`: one model's, or a
// pipeline's through its stages (PipelineStage::sample).
using NextToken = std::function<int(const int* window, int t, SplitMix64& rng)>;
// The loop both run: s.tokens times, the last `window_size` tokens (at most)
// in, one token out, from one RNG seeded with s.seed.
std::vector<int> generate_tokens(std::vector<int> prompt, const SampleSettings& s, int window_size,
                                 const NextToken& next);

// The next token drawn from the whole vocabulary's logits: top-k, then
// temperature, one uniform draw from `rng`.
int pick_token(const std::vector<float>& logits, const SampleSettings& s, SplitMix64& rng);

}  // namespace zt
