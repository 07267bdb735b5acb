// The GPT-2 transformer as a sequence of backend ops over one micro-batch.
// Parameters and gradients are reached only through ModuleHooks (ZeRO owns
// them), module by module in the order PyTorch runs the same GPT-2's modules
// and gradient hooks (training_events); the model owns its activations, sized
// for B x T at construction.
//
// Block l (pre-LayerNorm):
//   r_in  = l == 0 ? embed : r_mid[l-1] + fcproj[l-1]   (fused with LN1)
//   ln1   = LN1(r_in);  qkv = ln1 Wqkv + b;  atty = attention(qkv)
//   r_mid = r_in + atty Wproj + b                        (fused with LN2)
//   ln2   = LN2(r_mid); fch = ln2 Wfc + b; fcg = gelu(fch); fcproj = fcg Wfcproj + b
// Final: r_fin = r_mid[L-1] + fcproj[L-1]; lnf = LNf(r_fin); logits = lnf wte^T.
//
// A tensor-parallel shard's table (model/param_table.h) gives the model its
// shard's widths; where a shard's result is partial the model asks its hooks
// to combine it across shards (ModuleHooks::combine): after the attention and
// MLP projections and the embedding lookup, the input gradients of the QKV,
// MLP-up and LM-head projections, and the loss's log-sum-exp and target logit
// (the vocabulary is split, so no shard holds whole logits). The model itself
// knows nothing of ranks.
//
// Activation recompute (model/recompute.h): a block's activations fall into
// three sets, attention (ln1, qkv, atty and their statistics), residual (r_mid,
// ln2 and its statistics) and MLP (fch, fcg). A set the level recomputes is
// allocated once and shared by all blocks: the forward overwrites it block by
// block, and each block's backward first runs that part of its forward again,
// through the same ops and the same hooks (a further forward use of the
// modules, inside the backward).
#pragma once
#include <cstdint>
#include <vector>

#include "model/module_hooks.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "model/recompute.h"

namespace zt {

class GPT {
 public:
  GPT(const ParamTable& table, Ops& ops, int B, int T, Recompute recompute = Recompute::None);
  ~GPT();
  GPT(const GPT&) = delete;
  GPT& operator=(const GPT&) = delete;

  // Forward, fused loss and backward of one micro-batch of B x T tokens (host int).
  // Each token's loss gradient is scaled by dloss (1 / tokens in the global batch).
  // Returns the SUM of the B*T token losses.
  double forward_backward(const int* inputs, const int* targets, float dloss, ModuleHooks& hooks);
  // Forward and loss only; returns the sum of the B*T token losses.
  double forward_loss(const int* inputs, const int* targets, ModuleHooks& hooks);
  // Forward of b x t tokens (b <= B, t <= T); returns on the host the logits of
  // position pos of each row, [b, vocab_size].
  std::vector<float> forward_logits(const int* inputs, int b, int t, int pos, ModuleHooks& hooks);

  // Every hook event of one forward_backward, in order, as this model's own
  // forward and backward emit them (model/training_events.cpp records them).
  // Forward: each module's fetch and release, nested (root, wte, wpe, blocks,
  // ln_f, lm_head). Backward: root, lm_head, ln_f, then each block from the
  // last (mlp.c_proj, mlp.c_fc, ln_2, attn.c_proj, attn.c_attn, ln_1), then wpe
  // and wte; inside a module's backward its gradients become ready in
  // PyTorch's order (a Linear's bias before its weight, a LayerNorm's weight
  // before its bias), wte's only at the embedding's backward, since the LM head
  // shares it. A recompute level adds forward events inside the backward:
  // block, before the block's backward, h.i's forward without mlp.c_proj
  // (whose output the backward does not need); mlp, after h.i's backward
  // fetch, mlp and mlp.c_fc; attn, after ln_2's backward, ln_1 and attn
  // without attn.c_proj.
  static std::vector<ModuleEvent> training_events(const ParamTable& table,
                                                  Recompute recompute = Recompute::None);
  // Every combine of one forward_backward of a split model, in order, as this
  // model calls ModuleHooks::combine (recorded like training_events).
  static std::vector<CombinePoint> combine_points(const ParamTable& table,
                                                  Recompute recompute = Recompute::None);

  // Each token's loss from the last forward_loss or forward_backward, [B*T], host.
  const std::vector<float>& token_losses() const { return host_losses_; }

  int B() const { return B_; }
  int T() const { return T_; }

 private:
  struct Block {
    void *r_in, *ln1, *qkv, *atty, *r_mid, *ln2, *fch, *fcg;
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse;
  };
  struct BlockModules {
    int block, ln_1, attn, c_attn, attn_proj, ln_2, mlp, c_fc, mlp_proj;
  };
  // What the LM head's forward leaves: the training loss and the logits'
  // gradient in place of the logits (fused cross-entropy, scaled by dloss), the
  // evaluation loss, or only the logits.
  enum class Head { TrainLoss, EvalLoss, Logits };
  void forward(int b, int t, Head head, float dloss, ModuleHooks& hooks);
  void forward_to_lnf(int b, int t, ModuleHooks& hooks);
  void forward_head(int n, Head head, float dloss, ModuleHooks& hooks);
  // Block l's forward on b x t tokens, or its recompute inside the backward.
  void block_forward(int l, int b, int t, bool recompute, ModuleHooks& hooks);
  // Block l's forward in its parts; the recompute runs them again. ln_1 adds
  // the residual (r_in = r_mid[l-1] + fcproj) when asked, else normalises r_in
  // as kept; a projection is left out when only the inputs of the backward are
  // wanted.
  void ln1_forward(int l, int n, bool add_residual, ModuleHooks& hooks);
  void attn_forward(int l, int b, int t, bool project, ModuleHooks& hooks);
  void ln2_forward(int l, int n, ModuleHooks& hooks);
  void mlp_forward(int l, int n, bool project, ModuleHooks& hooks);
  // The loss (and with_gradient the logits' gradient) over a split vocabulary.
  void split_cross_entropy(int n, bool with_gradient, float dloss, ModuleHooks& hooks);
  bool vocab_split() const { return table_.vocab_rows() < table_.config().vocab_size; }
  // The backward of the last forward (Head::TrainLoss), with its recomputes.
  void backward(ModuleHooks& hooks);
  // The sum of the last forward's n token losses, copied to token_losses().
  double loss_sum(int n);

  void upload_tokens(const int* inputs, const int* targets, int n);
  void* act(size_t elems);
  float* stat(size_t elems);

  const ParamTable& table_;
  Ops& ops_;
  int B_, T_;
  Recompute recompute_;
  int root_, wte_, wpe_, ln_f_, lm_head_;
  std::vector<BlockModules> block_modules_;
  size_t es_;  // bytes per model-dtype element
  std::vector<void*> allocations_;
  std::vector<Block> blocks_;
  void *embed_, *fcproj_, *r_fin_, *lnf_, *logits_;
  float *lnf_mean_, *lnf_rstd_, *losses_;
  float *lse_ = nullptr, *picked_ = nullptr;  // the split loss's per-row parts
  int *tokens_, *targets_;
  // backward scratch
  void *dres_, *dln_, *datty_, *dwide_;
  std::vector<float> host_losses_;
};

}  // namespace zt
