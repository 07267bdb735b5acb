// Activation recompute levels (train.recompute): which activations of each
// block the backward recomputes from what the forward kept, instead of keeping
// them. Every level computes the same numbers with the same ops, so on the CPU
// the gradients are bit-identical to None.
//
//   None   every block keeps all its activations.
//   Attn   the attention sublayer's (ln_1 output, qkv, attention output, their
//          statistics) are recomputed from the block's input.
//   Mlp    the MLP's hidden activations (c_fc output and GELU output) are
//          recomputed from ln_2's output.
//   Block  only each block's input is kept; the block's forward (up to c_fc's
//          GELU) runs again in its backward.
#pragma once
#include <string>

namespace zt {

enum class Recompute { None, Attn, Mlp, Block };

inline const char* recompute_name(Recompute r) {
  static const char* names[] = {"none", "attn", "mlp", "block"};
  return names[static_cast<int>(r)];
}

// False when `name` is none of none, attn, mlp, block.
inline bool parse_recompute(const std::string& name, Recompute* out) {
  for (Recompute r : {Recompute::None, Recompute::Attn, Recompute::Mlp, Recompute::Block})
    if (name == recompute_name(r)) {
      *out = r;
      return true;
    }
  return false;
}

}  // namespace zt
