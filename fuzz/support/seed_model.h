// The model shape shared by the seed writer (fuzz/make_seeds.cpp) and the
// targets that need one (llm.c model files, checkpoints): small, so seeds stay
// a few kilobytes and every mutation is cheap to parse.
#pragma once
#include "model/gpt_config.h"

namespace zt::fuzz {

inline GPTConfig seed_model() {
  GPTConfig m;
  m.n_layer = 1;
  m.n_head = 2;
  m.n_embd = 8;
  m.vocab_size = 32;
  m.seq_len = 8;
  return m;
}

}  // namespace zt::fuzz
