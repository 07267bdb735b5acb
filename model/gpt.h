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
// Sequence parallelism (the split's `sequence`, Korthikanti et al. 2022): the
// residual stream (r_in, r_mid, the stage's output) and the LayerNorms' work
// keep the shard's rows of the pass, R = N/degree tokens at row index·R of
// the whole. Each block LayerNorm's output is kept for the shard's rows
// alone and gathered whole (GatherRows) into one shared buffer for the
// column-cut projection after it, and gathered again in the backward for
// that projection's weight gradient, as Megatron-LM does (ln_f's output
// stays whole: the head's input, outside the blocks); each partial sum of
// tensor parallelism (the projections' outputs, the embedding lookup, the
// input gradients) is a ScatterSum instead, and the output gradient a
// row-cut projection needs whole is gathered. A LayerNorm's weight and bias
// gradients then cover the shard's rows alone and are summed across shards
// (SumLayerNormGrads) before they are ready. The position embedding enters
// the embedding's sum once, on shard 0, like the row-cut biases. A pass whose
// tokens do not split evenly (a sampling window) is padded to a multiple of
// the degree; the padding rows hold whatever the buffers held and reach no
// real row (every op is row by row but attention, which reads the pass's own).
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
  // slots: micro-batches whose activations a pipeline stage keeps at once (1
  // without a pipeline). Activations the recompute level recomputes, and the
  // forward and backward scratch, are shared by all slots.
  GPT(const ParamTable& table, Ops& ops, int B, int T, Recompute recompute = Recompute::None,
      int slots = 1);
  ~GPT();
  GPT(const GPT&) = delete;
  GPT& operator=(const GPT&) = delete;

  // Forward, fused loss and backward of one micro-batch of B x T tokens (host int).
  // Each token's loss gradient is scaled by dloss (1 / tokens in the global batch).
  // Returns the SUM of the B*T token losses (0 on a stage without the head).
  double forward_backward(const int* inputs, const int* targets, float dloss, ModuleHooks& hooks);
  // Forward and loss only; returns the sum of the B*T token losses (0 without the head).
  double forward_loss(const int* inputs, const int* targets, ModuleHooks& hooks);
  // Forward of b x t tokens (b <= B, t <= T); returns on the host the logits of
  // position pos of each row, [b, vocab_size]: with a split vocabulary, the
  // rows are combined across the shards (SumFloats over each row, zero
  // outside a shard's part). On a pipeline stage: from the tokens (first
  // stage) or stage_input(0)'s b x t rows; a stage without the head leaves
  // them in stage_output(0) and returns no logits.
  std::vector<float> forward_logits(const int* inputs, int b, int t, int pos, ModuleHooks& hooks);

  // ---- one pipeline stage (model/param_table.h: the table's blocks and ends) ----
  // What the head's forward leaves: the training loss and the logits'
  // gradient in place of the logits (fused cross-entropy, scaled by dloss),
  // the evaluation loss, or only the logits.
  enum class Head { TrainLoss, EvalLoss, Logits };
  // The forward of one micro-batch into slot `slot`: from the tokens (inputs,
  // first stage) or from stage_input(slot) (received from the stage before),
  // through the stage's blocks, to the loss (last stage; targets) or
  // stage_output(slot) (for the stage after).
  void stage_forward(int slot, const int* inputs, const int* targets, Head head, float dloss,
                     ModuleHooks& hooks);
  // The backward of slot's micro-batch: from its loss (last stage) or from
  // output_grad() (received from the stage after), to the embeddings (first
  // stage) or input_grad(slot) (for the stage before).
  void stage_backward(int slot, ModuleHooks& hooks);
  // The sum of slot's token losses after its forward (last stage), copied to token_losses().
  double stage_loss_sum(int slot);
  // The residual stream at the stage's boundaries, [B*T, n_embd] each (the
  // shard's rows under sequence parallelism: stage_boundary_elems).
  size_t boundary_elems() const { return stage_boundary_elems(table_, B_, T_); }
  static size_t stage_boundary_elems(const ParamTable& table, int B, int T) {
    return table.residual_rows(static_cast<size_t>(B) * T) * table.config().n_embd;
  }
  void* stage_input(int slot) { return slots_[slot].blocks.front().r_in; }
  const void* stage_output(int slot) const { return slots_[slot].r_out; }
  void* output_grad() { return row(dres_, first_row(B_ * T_)); }
  const void* input_grad(int slot) const { return slots_[slot].dinput; }
  int slots() const { return static_cast<int>(slots_.size()); }

  // Every hook event of one forward_backward, in order, as this model's own
  // forward and backward emit them (model/training_events.cpp records them).
  // Forward: each module's fetch and release, nested (root, wte, wpe, blocks,
  // ln_f, lm_head). Backward: root, lm_head, ln_f, then each block from the
  // last (mlp.c_proj, mlp.c_fc, ln_2, attn.c_proj, attn.c_attn, ln_1), then wpe
  // and wte; inside a module's backward its gradients become ready in
  // PyTorch's order (a Linear's bias before its weight, a LayerNorm's weight
  // before its bias), wte's only at the embedding's backward, since the LM head
  // shares it (on a last stage without the embeddings: at the end of its
  // backward). A recompute level adds forward events inside the backward:
  // block, before the block's backward, h.i's forward without mlp.c_proj
  // (whose output the backward does not need); mlp, after h.i's backward
  // fetch, mlp and mlp.c_fc; attn, after ln_2's backward, ln_1 and attn
  // without attn.c_proj. A stage's table gives its own modules' events.
  static std::vector<ModuleEvent> training_events(const ParamTable& table,
                                                  Recompute recompute = Recompute::None);
  // Every combine of one forward_backward of a split model, in order, as this
  // model calls ModuleHooks::combine (recorded like training_events).
  static std::vector<CombinePoint> combine_points(const ParamTable& table,
                                                  Recompute recompute = Recompute::None);

  // Each token's loss from the last loss read (forward_loss, forward_backward,
  // stage_loss_sum), [B*T], host.
  const std::vector<float>& token_losses() const { return host_losses_; }

  int B() const { return B_; }
  int T() const { return T_; }
  const ParamTable& table() const { return table_; }

 private:
  struct Block {
    void *r_in, *ln1, *qkv, *atty, *r_mid, *ln2, *fch, *fcg;
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse;
  };
  // One micro-batch's activations: its blocks' (local index), the residual
  // after the last block (ln_f's input, or the stage's output), and the head's
  // (last stage) or the input's gradient (a stage after the first).
  struct Slot {
    std::vector<Block> blocks;
    void *r_out = nullptr, *lnf = nullptr, *logits = nullptr, *dinput = nullptr;
    float *lnf_mean = nullptr, *lnf_rstd = nullptr, *losses = nullptr;
    float *lse = nullptr, *picked = nullptr;  // the split loss's per-row parts
    int *tokens = nullptr, *targets = nullptr;
  };
  struct BlockModules {
    int block, ln_1, attn, c_attn, attn_proj, ln_2, mlp, c_fc, mlp_proj;
  };
  void forward_to_lnf(int b, int t, ModuleHooks& hooks);
  void forward_head(int n, Head head, float dloss, ModuleHooks& hooks);
  // Block l's forward on b x t tokens, or its recompute inside the backward
  // (l: the whole model's index).
  void block_forward(int l, int b, int t, bool recompute, ModuleHooks& hooks);
  // Block l's forward in its parts; the recompute runs them again. ln_1 adds
  // the residual (r_in = r_mid[l-1] + fcproj) when asked, else normalises r_in
  // as kept; a projection is left out when only the inputs of the backward are
  // wanted.
  void ln1_forward(int l, int n, bool add_residual, ModuleHooks& hooks);
  void attn_forward(int l, int b, int t, bool project, ModuleHooks& hooks);
  void ln2_forward(int l, int n, ModuleHooks& hooks);
  // gather_input: ln_2's kept rows gathered whole again first (the `mlp`
  // recompute, inside the backward; the forward finds them gathered).
  void mlp_forward(int l, int n, bool project, bool gather_input, ModuleHooks& hooks);
  // The loss (and with_gradient the logits' gradient) over a split vocabulary.
  void split_cross_entropy(int n, bool with_gradient, float dloss, ModuleHooks& hooks);
  bool vocab_split() const { return table_.vocab_rows() < table_.config().vocab_size; }
  Block& block(int l) { return slot_->blocks[static_cast<size_t>(l - table_.first_block())]; }
  const BlockModules& modules_of(int l) const {
    return block_modules_[static_cast<size_t>(l - table_.first_block())];
  }
  int last_block() const { return table_.first_block() + table_.blocks() - 1; }
  double loss_sum(int n);
  // The shard's first row of a pass over n tokens (0 without sequence
  // parallelism), and buf's row r of the residual width.
  size_t first_row(int n) const;
  void* row(void* buf, size_t r) const {
    return static_cast<char*>(buf) + r * static_cast<size_t>(table_.config().n_embd) * es_;
  }
  // Sum (tensor parallelism) or ScatterSum (sequence parallelism) of buf's
  // whole rows of a pass over n tokens.
  void sum_partial(int module, bool backward, void* buf, int n, ModuleHooks& hooks);
  // Gathers buf's rows whole under sequence parallelism (nothing otherwise).
  void gather_rows(int module, bool backward, void* buf, int n, ModuleHooks& hooks);
  // A LayerNorm output whole for a projection: under sequence parallelism its
  // kept rows copied to the shard's rows of ln_whole_ and gathered; without
  // it, the kept output itself. ln_input: the one gathered last.
  const void* whole_rows(int module, bool backward, const void* kept, int n, ModuleHooks& hooks);
  const void* ln_input(const void* kept) const { return sequence_split_ ? ln_whole_ : kept; }

  void upload_tokens(const int* inputs, const int* targets, int n);
  void* act(size_t elems);
  float* stat(size_t elems);

  const ParamTable& table_;
  Ops& ops_;
  int B_, T_;
  Recompute recompute_;
  int root_, wte_, wpe_, ln_f_, lm_head_;  // -1 where the stage has no such module
  std::vector<BlockModules> block_modules_;
  size_t es_;  // bytes per model-dtype element
  std::vector<void*> allocations_;
  std::vector<Slot> slots_;
  Slot* slot_;    // the micro-batch's activations the running pass uses
  void* fcproj_;  // forward scratch: a projection's output, consumed at once
  // backward scratch
  void *dres_, *dln_, *datty_, *dwide_;
  std::vector<float> host_losses_;
  bool sequence_split_;
  void* layernorm_grads_ = nullptr;  // [2C] a LayerNorm's gradients over the shard's rows
  void* ln_whole_ = nullptr;  // [N, C] a LayerNorm output gathered whole (sequence parallelism)
};

}  // namespace zt
