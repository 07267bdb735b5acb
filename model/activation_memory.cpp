#include "model/activation_memory.h"

namespace zt {

uint64_t activation_bytes(const GPTConfig& c, int B, int T, Recompute r, DType model, int tensor) {
  const uint64_t N = static_cast<uint64_t>(B) * T, C = c.n_embd, t = tensor;
  const uint64_t H = c.n_head / t, A = C / t, F = 4 * C / t, V = c.vocab_size / t;
  const uint64_t L = c.n_layer, e = dtype_size(model), f = 4;
  const uint64_t attention = (N * C + 4 * N * A) * e + (2 * N + N * H) * f;
  const uint64_t residual = 2 * N * C * e + 2 * N * f;
  const uint64_t mlp = 2 * N * F * e;
  const uint64_t inputs = (L - 1) * N * C * e;
  const uint64_t split_loss = t > 1 ? 2 * N * f : 0;
  const uint64_t fixed =
      (4 * N * C + N * V) * e + 5 * N * f + split_loss + (2 * N * C + N * A + N * F) * e;
  const bool share_attention = r == Recompute::Attn || r == Recompute::Block;
  const bool share_mlp = r == Recompute::Mlp || r == Recompute::Block;
  const bool share_residual = r == Recompute::Block;
  auto copies = [&](bool shared) { return shared ? 1 : L; };
  return copies(share_attention) * attention + copies(share_residual) * residual +
         copies(share_mlp) * mlp + inputs + fixed;
}

}  // namespace zt
