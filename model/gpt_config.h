// Shape of a GPT-2-style model.
#pragma once
#include <cstdint>

namespace zt {

struct GPTConfig {
  int n_layer = 4;
  int n_head = 4;
  int n_embd = 128;
  int vocab_size = 256;  // rows of the (possibly padded) token embedding
  int seq_len = 128;     // block size: the longest sequence the model sees
};

}  // namespace zt
