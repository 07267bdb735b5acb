// Bytes of the activation buffers GPT allocates for one B x T micro-batch, by
// recompute level: the formula that `plan` prints and that equals the memory
// ledger's Activations on the CPU (the GPU adds cuBLASLt's workspace and the
// kernels' scratch).
#pragma once
#include <cstdint>

#include "model/gpt_config.h"
#include "model/ops.h"
#include "model/recompute.h"

namespace zt {

// With N = B*T rows, C = n_embd, H = n_head, V = vocab_size, L = n_layer, e =
// bytes of the model dtype, f = 4 (fp32 statistics, int32 tokens):
//   attention set  A = 5NC e + (2N + NH) f   (ln_1 out, qkv, attention out; ln_1 mean/rstd, lse)
//   residual set   R = 2NC e + 2N f          (r_mid, ln_2 out; ln_2 mean/rstd)
//   MLP set        M = 8NC e                 (c_fc out, GELU out)
//   block inputs   (L - 1) NC e              (block 0's input is the embedding)
//   fixed          (4NC + NV) e + 5N f + 7NC e
//                  (embedding, projection scratch, final residual, ln_f out, logits;
//                   ln_f mean/rstd, losses, tokens, targets; backward scratch 3NC + 4NC)
// Each set is kept per block (x L) or, when its level recomputes it, once,
// shared by all blocks: none keeps A, R, M per block; attn shares A; mlp
// shares M; block shares all three.
uint64_t activation_bytes(const GPTConfig& c, int B, int T, Recompute r, DType model);

}  // namespace zt
