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

// With N = B*T rows, C = n_embd, L = n_layer, e = bytes of the model dtype,
// f = 4 (fp32 statistics, int32 tokens), and a tensor shard's widths over
// `tensor` shards (model/param_table.h): heads H = n_head / tensor, attention
// width A = C / tensor, MLP width F = 4C / tensor, vocabulary rows
// V = vocab_size / tensor (without tensor parallelism A = C, F = 4C):
//   attention set  (NC + 4NA) e + (2N + NH) f (ln_1 out, qkv, attention out;
//                                              ln_1 mean/rstd, lse)
//   residual set   2NC e + 2N f              (r_mid, ln_2 out; ln_2 mean/rstd)
//   MLP set        M = 2NF e                 (c_fc out, GELU out)
//   block inputs   (L - 1) NC e              (block 0's input is the embedding)
//   fixed          (4NC + NV) e + 5N f + (2NC + NA + NF) e, and 2N f when split
//                  (embedding, projection scratch, final residual, ln_f out, logits;
//                   ln_f mean/rstd, losses, tokens, targets; backward scratch
//                   2NC + NA + NF; the split loss's log-sum-exp and target logit)
// Each set is kept per block (x L) or, when its level recomputes it, once,
// shared by all blocks: none keeps all three per block; attn shares the
// attention set; mlp the MLP set; block all three.
// Sequence parallelism (tensor > 1) keeps the residual stream, the block
// LayerNorms' outputs and the LayerNorm statistics for the shard's N/tensor
// rows alone: r_mid, the block inputs, the final residual, the input's
// gradient, every LayerNorm's output (ln_1's, ln_2's and ln_f's) and every
// mean/rstd, and adds once the buffer they are gathered into, NC e, and 2C e
// of LayerNorm gradient scratch.
uint64_t activation_bytes(const GPTConfig& c, int B, int T, Recompute r, DType model,
                          int tensor = 1, bool sequence = false);

// One pipeline stage's (model/gpt.h), with `blocks` blocks, keeping `slots`
// micro-batches' activations at once (the schedule's peak in flight,
// zero/grid/pipeline_schedule.h). The sets above are per block per slot, or
// once when recomputed; besides them,
//   per slot  blocks NC e                (block inputs: the first is the
//                                         embedding, or the stage's input)
//             NC e                       (the residual after the last block:
//                                         ln_f's input, or the stage's output)
//             last stage: (NC + NV) e + 4N f, and 2N f when split
//                         (ln_f out, logits; ln_f mean/rstd, losses, targets)
//             first stage: N f (tokens); any other: NC e (the input's gradient)
//   once      (3NC + NA + NF) e          (projection scratch, backward scratch),
//             and under sequence parallelism (NC + 2C) e (the gathered
//             LayerNorm output, the LayerNorm gradients' scratch)
// The whole model is the one stage with every block, first and last, one slot.
uint64_t stage_activation_bytes(const GPTConfig& c, int B, int T, Recompute r, DType model,
                                int tensor, int blocks, bool first, bool last, int slots,
                                bool sequence = false);

}  // namespace zt
