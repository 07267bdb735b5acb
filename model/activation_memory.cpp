#include "model/activation_memory.h"

namespace zt {

uint64_t stage_activation_bytes(const GPTConfig& c, int B, int T, Recompute r, DType model,
                                int tensor, int blocks, bool first, bool last, int slots,
                                bool sequence) {
  const uint64_t N = static_cast<uint64_t>(B) * T, C = c.n_embd, t = tensor;
  const bool split_rows = sequence && t > 1;
  const uint64_t R = split_rows ? N / t : N;
  const uint64_t H = c.n_head / t, A = C / t, F = 4 * C / t, V = c.vocab_size / t;
  const uint64_t Lb = blocks, S = slots, e = dtype_size(model), f = 4;
  const uint64_t attention = (R * C + 4 * N * A) * e + (2 * R + N * H) * f;
  const uint64_t residual = 2 * R * C * e + 2 * R * f;
  const uint64_t mlp = 2 * N * F * e;
  const bool share_attention = r == Recompute::Attn || r == Recompute::Block;
  const bool share_mlp = r == Recompute::Mlp || r == Recompute::Block;
  const bool share_residual = r == Recompute::Block;
  auto copies = [&](bool shared) { return shared ? 1 : Lb * S; };
  const uint64_t sets = copies(share_attention) * attention + copies(share_residual) * residual +
                        copies(share_mlp) * mlp;
  uint64_t per_slot = (Lb + 1) * R * C * e;
  if (last) per_slot += (R * C + N * V) * e + (2 * R + 2 * N) * f + (t > 1 ? 2 * N * f : 0);
  per_slot += first ? N * f : R * C * e;
  const uint64_t once = (3 * N * C + N * A + N * F) * e + (split_rows ? (N * C + 2 * C) * e : 0);
  return sets + S * per_slot + once;
}

uint64_t activation_bytes(const GPTConfig& c, int B, int T, Recompute r, DType model, int tensor,
                          bool sequence) {
  return stage_activation_bytes(c, B, T, r, model, tensor, c.n_layer, true, true, 1, sequence);
}

}  // namespace zt
