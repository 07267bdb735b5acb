// The GPT-2 transformer as a sequence of backend ops over one micro-batch.
// Parameters and gradients are reached only through UnitHooks (ZeRO owns them);
// the model owns its activations, sized for B x T at construction.
//
// Block l (pre-LayerNorm):
//   r_in  = l == 0 ? embed : r_mid[l-1] + fcproj[l-1]   (fused with LN1)
//   ln1   = LN1(r_in);  qkv = ln1 Wqkv + b;  atty = attention(qkv)
//   r_mid = r_in + atty Wproj + b                        (fused with LN2)
//   ln2   = LN2(r_mid); fch = ln2 Wfc + b; fcg = gelu(fch); fcproj = fcg Wfcproj + b
// Final: r_fin = r_mid[L-1] + fcproj[L-1]; lnf = LNf(r_fin); logits = lnf wte^T.
#pragma once
#include <cstdint>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "model/unit_hooks.h"

namespace zt {

class GPT {
 public:
  GPT(const ParamTable& table, Ops& ops, int B, int T);
  ~GPT();
  GPT(const GPT&) = delete;
  GPT& operator=(const GPT&) = delete;

  // Forward, fused loss and backward of one micro-batch of B x T tokens (host int).
  // Each token's loss gradient is scaled by dloss (1 / tokens in the global batch).
  // Returns the SUM of the B*T token losses.
  double forward_backward(const int* inputs, const int* targets, float dloss, UnitHooks& hooks);
  // Forward and loss only; returns the sum of the B*T token losses.
  double forward_loss(const int* inputs, const int* targets, UnitHooks& hooks);
  // Forward of b x t tokens (b <= B, t <= T); returns on the host the logits of
  // position pos of each row, [b, vocab_size].
  std::vector<float> forward_logits(const int* inputs, int b, int t, int pos, UnitHooks& hooks);

  // The order in which forward_backward acquires units' parameters: forward
  // 0..L+1, the head (0, then L+1 for the final layernorm), backward L..1.
  static std::vector<int> training_unit_order(int n_layer);

  // Each token's loss from the last forward_loss or forward_backward, [B*T], host.
  const std::vector<float>& token_losses() const { return host_losses_; }

  int B() const { return B_; }
  int T() const { return T_; }

 private:
  struct Block {
    void *r_in, *ln1, *qkv, *atty, *r_mid, *ln2, *fch, *fcg;
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse;
  };
  void forward_to_lnf(int b, int t, UnitHooks& hooks);
  void upload_tokens(const int* inputs, const int* targets, int n);
  const void* param(const void* unit_base, int param_index) const;
  void* grad(void* unit_base, int param_index) const;
  void* act(size_t elems);
  float* stat(size_t elems);

  const ParamTable& table_;
  Ops& ops_;
  int B_, T_;
  size_t es_;  // bytes per model-dtype element
  std::vector<void*> allocations_;
  std::vector<Block> blocks_;
  void *embed_, *fcproj_, *r_fin_, *lnf_, *logits_;
  float *lnf_mean_, *lnf_rstd_, *losses_;
  int *tokens_, *targets_;
  // backward scratch
  void *dres_, *dln_, *datty_, *dwide_;
  std::vector<float> host_losses_;
};

// GPT-2 initialisation of the whole flat layout (fp32, host), a pure function of
// the seed: N(0, 0.02) weights, residual projections scaled by 1/sqrt(2 L),
// zero biases, unit LayerNorm gains.
void init_gpt2_weights(const ParamTable& table, uint64_t seed, float* out);

}  // namespace zt
