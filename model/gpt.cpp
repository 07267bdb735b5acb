#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "model/device_services.h"

namespace zt {

GPT::GPT(const ParamTable& table, Ops& ops, int B, int T, Recompute recompute, int slots)
    : table_(table), ops_(ops), B_(B), T_(T), recompute_(recompute), es_(dtype_size(ops.dtype())),
      sequence_split_(table.sequence_split()) {
  const GPTConfig& c = table.config();
  const size_t N = static_cast<size_t>(B) * T, C = c.n_embd, NH = table.heads();
  // The residual stream's rows: all N, or the shard's under sequence parallelism.
  const size_t R = table.residual_rows(N);
  if (sequence_split_ && N % static_cast<size_t>(table.split().degree) != 0)
    throw std::invalid_argument("sequence parallelism: a micro-batch's " + std::to_string(N) +
                                " tokens do not split into " +
                                std::to_string(table.split().degree) + " equal parts");
  const size_t A = table.attn_width(), F = table.mlp_width(), V = table.vocab_rows();
  const bool first = table.has_embeddings(), last = table.has_head();
  // A LayerNorm's output (ln_f's too) is kept for its rows of the residual
  // stream (R): under sequence parallelism it is gathered whole into
  // ln_whole_ for the projection (or the LM head) after it, and again for
  // that one's weight gradient.
  auto attention_set = [&](Block& b) {
    b.ln1 = act(R * C);
    b.qkv = act(N * 3 * A);
    b.atty = act(N * A);
    b.ln1_mean = stat(R);
    b.ln1_rstd = stat(R);
    b.lse = stat(N * NH);
  };
  auto residual_set = [&](Block& b) {
    b.r_mid = act(R * C);
    b.ln2 = act(R * C);
    b.ln2_mean = stat(R);
    b.ln2_rstd = stat(R);
  };
  auto mlp_set = [&](Block& b) {
    b.fch = act(N * F);
    b.fcg = act(N * F);
  };
  // A set the level recomputes is allocated once, for every block and slot.
  const bool share_attention = recompute == Recompute::Attn || recompute == Recompute::Block;
  const bool share_residual = recompute == Recompute::Block;
  const bool share_mlp = recompute == Recompute::Mlp || recompute == Recompute::Block;
  Block shared{};
  if (share_attention) attention_set(shared);
  if (share_residual) residual_set(shared);
  if (share_mlp) mlp_set(shared);
  slots_.resize(static_cast<size_t>(slots));
  for (Slot& s : slots_) {
    s.blocks.assign(static_cast<size_t>(table.blocks()), shared);
    for (Block& b : s.blocks) {
      b.r_in = act(R * C);  // the first block's: the embedding, or the stage's input
      if (!share_attention) attention_set(b);
      if (!share_residual) residual_set(b);
      if (!share_mlp) mlp_set(b);
    }
    s.r_out = act(R * C);
    if (last) {
      s.lnf = act(R * C);
      s.logits = act(N * V);
      s.lnf_mean = stat(R);
      s.lnf_rstd = stat(R);
      s.losses = stat(N);
      if (vocab_split()) {
        s.lse = stat(N);
        s.picked = stat(N);
      }
      s.targets = static_cast<int*>(ops_.alloc(N * sizeof(int), MemCategory::Activations));
      allocations_.push_back(s.targets);
    }
    if (first) {
      s.tokens = static_cast<int*>(ops_.alloc(N * sizeof(int), MemCategory::Activations));
      allocations_.push_back(s.tokens);
    } else {
      s.dinput = act(R * C);
    }
  }
  slot_ = &slots_.front();
  fcproj_ = act(N * C);
  dres_ = act(N * C);
  dln_ = act(N * C);
  datty_ = act(N * A);
  dwide_ = act(N * std::max(3 * A, F));
  if (sequence_split_) {
    layernorm_grads_ = act(2 * C);
    ln_whole_ = act(N * C);
  }
  host_losses_.resize(N);
  auto m = [&](const std::string& name) { return table.module_index(name); };
  root_ = m("");
  wte_ = m("wte");
  wpe_ = m("wpe");
  ln_f_ = m("ln_f");
  lm_head_ = m("lm_head");
  for (int l = table.first_block(); l <= last_block(); l++) {
    const std::string h = "h." + std::to_string(l);
    block_modules_.push_back({m(h), m(h + ".ln_1"), m(h + ".attn"), m(h + ".attn.c_attn"),
                              m(h + ".attn.c_proj"), m(h + ".ln_2"), m(h + ".mlp"),
                              m(h + ".mlp.c_fc"), m(h + ".mlp.c_proj")});
  }
}

GPT::~GPT() {
  for (void* p : allocations_) ops_.release(p);
}

void* GPT::act(size_t elems) {
  void* p = ops_.alloc(elems * es_, MemCategory::Activations);
  allocations_.push_back(p);
  return p;
}

float* GPT::stat(size_t elems) {
  void* p = ops_.alloc(elems * sizeof(float), MemCategory::Activations);
  allocations_.push_back(p);
  return static_cast<float*>(p);
}

void GPT::upload_tokens(const int* inputs, const int* targets, int n) {
  if (table_.has_embeddings()) ops_.from_host(slot_->tokens, inputs, n * sizeof(int));
  if (targets && table_.has_head()) ops_.from_host(slot_->targets, targets, n * sizeof(int));
}

// The forward of b x t tokens into slot `slot`, the root module open throughout.
void GPT::stage_forward(int slot, const int* inputs, const int* targets, Head head, float dloss,
                        ModuleHooks& hooks) {
  slot_ = &slots_[static_cast<size_t>(slot)];
  upload_tokens(inputs, targets, B_ * T_);
  const ModuleScope root(hooks, root_, false);
  forward_to_lnf(B_, T_, hooks);
  if (table_.has_head()) forward_head(B_ * T_, head, dloss, hooks);
}

// The forward from the embeddings (or the stage's input) to the final
// LayerNorm, leaving lnf ready for the head (or the stage's output); every
// module's parameters are fetched just before it runs and released after.
void GPT::forward_to_lnf(int b, int t, ModuleHooks& hooks) {
  const GPTConfig& c = table_.config();
  const int N = b * t, C = c.n_embd;
  const size_t R = table_.residual_rows(N), first = first_row(N);
  void* r_in = slot_->blocks.front().r_in;
  // The lookup's partial sum goes through fcproj_ when only the shard's rows are kept.
  void* embed = sequence_split_ ? fcproj_ : r_in;
  // The two embeddings are separate modules, as in PyTorch: lookup, then the
  // position add in place (bit-identical to one fused add).
  if (table_.has_embeddings()) {
    {
      const ModuleScope wte(hooks, wte_, false);
      if (vocab_split()) {
        ops_.embedding_rows_forward(embed, slot_->tokens, wte[0], table_.vocab_begin(),
                                    table_.vocab_rows(), N, C);
        if (!sequence_split_)
          hooks.combine(wte_, false, Combine::Sum, embed, static_cast<size_t>(N) * C);
      } else {
        ops_.encoder_forward(embed, slot_->tokens, wte[0], nullptr, b, t, C);
      }
    }
    const ModuleScope wpe(hooks, wpe_, false);
    if (!sequence_split_) {
      ops_.encoder_forward(embed, slot_->tokens, nullptr, wpe[0], b, t, C);
    } else {
      // Each token's row is nonzero on one shard only, so adding the position
      // on shard 0 before the sum gives the sum of the unsplit lookup, exactly.
      if (table_.split().index == 0)
        ops_.encoder_forward(embed, slot_->tokens, nullptr, wpe[0], b, t, C);
      sum_partial(wpe_, false, embed, N, hooks);
      ops_.copy(r_in, row(embed, first), R * C * es_);
    }
  }
  for (int l = table_.first_block(); l <= last_block(); l++) block_forward(l, b, t, false, hooks);
  const void* r_mid = block(last_block()).r_mid;
  if (!table_.has_head()) {
    // The residual stream leaves the stage whole: r_mid + the MLP's projection.
    ops_.copy(slot_->r_out, r_mid, R * C * es_);
    ops_.services().add_inplace(slot_->r_out, row(fcproj_, first), R * C);
    return;
  }
  const ModuleScope lnf(hooks, ln_f_, false);
  ops_.residual_layernorm_forward(slot_->r_out, slot_->lnf, slot_->lnf_mean, slot_->lnf_rstd, r_mid,
                                  row(fcproj_, first), lnf[0], lnf[1], static_cast<int>(R), C);
  whole_rows(ln_f_, false, slot_->lnf, N, hooks);
}

size_t GPT::first_row(int n) const {
  return sequence_split_ ? table_.split().index * table_.residual_rows(n) : 0;
}

void GPT::sum_partial(int module, bool backward, void* buf, int n, ModuleHooks& hooks) {
  const size_t C = table_.config().n_embd;
  if (sequence_split_)
    hooks.combine(module, backward, Combine::ScatterSum, buf,
                  table_.residual_rows(n) * table_.split().degree * C);
  else hooks.combine(module, backward, Combine::Sum, buf, static_cast<size_t>(n) * C);
}

void GPT::gather_rows(int module, bool backward, void* buf, int n, ModuleHooks& hooks) {
  if (!sequence_split_) return;
  hooks.combine(module, backward, Combine::GatherRows, buf,
                table_.residual_rows(n) * table_.split().degree * table_.config().n_embd);
}

const void* GPT::whole_rows(int module, bool backward, const void* kept, int n,
                            ModuleHooks& hooks) {
  if (!sequence_split_) return kept;
  ops_.copy(row(ln_whole_, first_row(n)), kept,
            table_.residual_rows(n) * static_cast<size_t>(table_.config().n_embd) * es_);
  gather_rows(module, backward, ln_whole_, n, hooks);
  return ln_whole_;
}

// A recompute runs the whole block but the MLP's projection, from the kept
// input; the attention projection's output goes through fcproj_, which the
// backward does not read.
void GPT::block_forward(int l, int b, int t, bool recompute, ModuleHooks& hooks) {
  const int N = b * t;
  const ModuleScope scope(hooks, modules_of(l).block, false);
  ln1_forward(l, N, !recompute && l > table_.first_block(), hooks);
  attn_forward(l, b, t, true, hooks);
  ln2_forward(l, N, hooks);
  mlp_forward(l, N, !recompute, false, hooks);
}

void GPT::ln1_forward(int l, int n, bool add_residual, ModuleHooks& hooks) {
  const int C = table_.config().n_embd, R = static_cast<int>(table_.residual_rows(n));
  const size_t first = first_row(n);
  Block& k = block(l);
  const ModuleScope w(hooks, modules_of(l).ln_1, false);
  if (add_residual)
    ops_.residual_layernorm_forward(k.r_in, k.ln1, k.ln1_mean, k.ln1_rstd, block(l - 1).r_mid,
                                    row(fcproj_, first), w[0], w[1], R, C);
  else ops_.layernorm_forward(k.ln1, k.ln1_mean, k.ln1_rstd, k.r_in, w[0], w[1], R, C);
  whole_rows(modules_of(l).ln_1, false, k.ln1, n, hooks);
}

void GPT::attn_forward(int l, int b, int t, bool project, ModuleHooks& hooks) {
  const int N = b * t, C = table_.config().n_embd, NH = table_.heads(), A = table_.attn_width();
  Block& k = block(l);
  const BlockModules& m = modules_of(l);
  const ModuleScope attn(hooks, m.attn, false);
  {
    const ModuleScope qkv(hooks, m.c_attn, false);
    ops_.matmul_forward(k.qkv, nullptr, ln_input(k.ln1), qkv[0], qkv[1], N, C, 3 * A);
  }
  ops_.attention_forward(k.atty, k.lse, k.qkv, b, t, A, NH);
  if (project) {
    const ModuleScope proj(hooks, m.attn_proj, false);
    ops_.matmul_forward(fcproj_, nullptr, k.atty, proj[0], proj[1], N, A, C);
    sum_partial(m.attn_proj, false, fcproj_, N, hooks);
  }
}

void GPT::ln2_forward(int l, int n, ModuleHooks& hooks) {
  const int C = table_.config().n_embd, R = static_cast<int>(table_.residual_rows(n));
  const size_t first = first_row(n);
  Block& k = block(l);
  const ModuleScope w(hooks, modules_of(l).ln_2, false);
  ops_.residual_layernorm_forward(k.r_mid, k.ln2, k.ln2_mean, k.ln2_rstd, k.r_in,
                                  row(fcproj_, first), w[0], w[1], R, C);
  whole_rows(modules_of(l).ln_2, false, k.ln2, n, hooks);
}

void GPT::mlp_forward(int l, int n, bool project, bool gather_input, ModuleHooks& hooks) {
  const int C = table_.config().n_embd, F = table_.mlp_width();
  Block& k = block(l);
  const BlockModules& m = modules_of(l);
  const ModuleScope mlp(hooks, m.mlp, false);
  {
    const ModuleScope fc(hooks, m.c_fc, false);
    const void* x = gather_input ? whole_rows(m.c_fc, false, k.ln2, n, hooks) : ln_input(k.ln2);
    ops_.matmul_forward(k.fcg, k.fch, x, fc[0], fc[1], n, C, F);
  }
  if (project) {
    const ModuleScope fcp(hooks, m.mlp_proj, false);
    ops_.matmul_forward(fcproj_, nullptr, k.fcg, fcp[0], fcp[1], n, F, C);
    sum_partial(m.mlp_proj, false, fcproj_, n, hooks);
  }
}

void GPT::forward_head(int n, Head head, float dloss, ModuleHooks& hooks) {
  const GPTConfig& c = table_.config();
  Slot& s = *slot_;
  {
    const ModuleScope wte(hooks, lm_head_, false);
    // ln_f's output, gathered whole into ln_whole_ under sequence parallelism.
    const void* x = sequence_split_ ? ln_whole_ : s.lnf;
    ops_.matmul_forward(s.logits, nullptr, x, wte[0], nullptr, n, c.n_embd, table_.vocab_rows());
  }
  if (head == Head::Logits) return;
  if (vocab_split()) {
    split_cross_entropy(n, head == Head::TrainLoss, dloss, hooks);
    return;
  }
  if (head == Head::TrainLoss)
    ops_.cross_entropy_forward_backward(s.losses, s.logits, s.targets, n, c.vocab_size, dloss);
  else if (head == Head::EvalLoss)
    ops_.cross_entropy_forward(s.losses, s.logits, s.targets, n, c.vocab_size);
}

// The loss over a vocabulary split across shards: each shard's log-sum-exp
// over its rows and the target's logit (on the shard holding it) are combined
// across shards; no shard ever holds the whole logits.
void GPT::split_cross_entropy(int n, bool with_gradient, float dloss, ModuleHooks& hooks) {
  const int V = table_.vocab_rows(), begin = table_.vocab_begin();
  Slot& s = *slot_;
  ops_.logits_logsumexp(s.lse, s.logits, n, V);
  hooks.combine(lm_head_, false, Combine::LogSumExp, s.lse, n);
  ops_.logits_pick(s.picked, s.logits, s.targets, begin, n, V);
  hooks.combine(lm_head_, false, Combine::SumFloats, s.picked, n);
  ops_.losses_from_lse(s.losses, s.lse, s.picked, n);
  if (with_gradient)
    ops_.cross_entropy_backward_from_lse(s.logits, s.lse, s.targets, begin, n, V, dloss);
}

void GPT::stage_backward(int slot, ModuleHooks& hooks) {
  slot_ = &slots_[static_cast<size_t>(slot)];
  Slot& s = *slot_;
  const GPTConfig& c = table_.config();
  const int N = B_ * T_, C = c.n_embd, NH = table_.heads(), V = table_.vocab_rows();
  const int A = table_.attn_width(), F = table_.mlp_width();
  const int R = static_cast<int>(table_.residual_rows(N));
  const size_t first = first_row(N);
  const ModuleScope root(hooks, root_, true);

  // dres_ carries the gradient of the residual stream backwards through the
  // blocks (the shard's rows of it under sequence parallelism); a stage
  // without the head starts from the one received (output_grad).
  auto layernorm = [&](int module, void* dout_in, void* inp, const float* mean, const float* rstd) {
    const ModuleScope w(hooks, module, true);
    const std::vector<int>& p = table_.modules()[module].params;
    if (!sequence_split_) {
      ops_.layernorm_backward(dres_, hooks.grad(p[0]), hooks.grad(p[1]), dout_in, inp, w[0], mean,
                              rstd, N, C);
    } else {
      // The shard's rows give part of the weight and bias gradients: summed
      // across shards aside, then added to the micro-step's.
      char* dw = static_cast<char*>(layernorm_grads_);
      ops_.memzero(dw, 2 * static_cast<size_t>(C) * es_);
      ops_.layernorm_backward(row(dres_, first), dw, dw + C * es_, row(dout_in, first), inp, w[0],
                              mean, rstd, R, C);
      hooks.combine(module, true, Combine::SumLayerNormGrads, dw, 2 * static_cast<size_t>(C));
      ops_.services().add_inplace(hooks.grad(p[0]), dw, C);
      ops_.services().add_inplace(hooks.grad(p[1]), dw + C * es_, C);
    }
    hooks.grad_ready(p[0]);
    hooks.grad_ready(p[1]);
  };
  // A projection whose weight keeps only its shard's output rows leaves a
  // partial input gradient, combined across shards, and under sequence
  // parallelism reads its input (a LayerNorm's kept rows) gathered whole
  // again; one that keeps its input columns needs the whole output
  // gradient, gathered under sequence parallelism.
  auto linear = [&](int module, void* dinp, void* dout, const void* inp, const void* pre_gelu,
                    int in, int out) {
    const ModuleScope w(hooks, module, true);
    const std::vector<int>& p = table_.modules()[module].params;
    const ShardCut cut = table_.params()[p[0]].cut;
    const bool keeps_output_rows = cut == ShardCut::Rows || cut == ShardCut::QkvRows;
    if (cut == ShardCut::Columns) gather_rows(module, true, dout, N, hooks);
    if (keeps_output_rows) inp = whole_rows(module, true, inp, N, hooks);
    ops_.matmul_backward(dinp, hooks.grad(p[0]), hooks.grad(p[1]), dout, inp, w[0], pre_gelu, N, in,
                         out);
    if (keeps_output_rows) sum_partial(module, true, dinp, N, hooks);
    hooks.grad_ready(p[1]);
    hooks.grad_ready(p[0]);
  };
  if (table_.has_head()) {
    {
      // The LM head adds into wte's gradient, which completes only at the embedding.
      const ModuleScope head(hooks, lm_head_, true);
      const void* x = whole_rows(lm_head_, true, s.lnf, N, hooks);
      ops_.matmul_backward(dln_, hooks.grad(0), nullptr, s.logits, x, head[0], nullptr, N, C, V);
      if (vocab_split()) sum_partial(lm_head_, true, dln_, N, hooks);
    }
    ops_.memzero(dres_, static_cast<size_t>(N) * C * es_);
    layernorm(ln_f_, dln_, s.r_out, s.lnf_mean, s.lnf_rstd);
  }
  for (int l = last_block(); l >= table_.first_block(); l--) {
    Block& k = block(l);
    const BlockModules& m = modules_of(l);
    if (recompute_ == Recompute::Block) block_forward(l, B_, T_, true, hooks);
    const ModuleScope scope(hooks, m.block, true);
    if (recompute_ == Recompute::Mlp) mlp_forward(l, N, false, true, hooks);
    {
      const ModuleScope mlp(hooks, m.mlp, true);
      linear(m.mlp_proj, dwide_, dres_, k.fcg, k.fch, F, C);
      linear(m.c_fc, dln_, dwide_, k.ln2, nullptr, C, F);
    }
    layernorm(m.ln_2, dln_, k.r_mid, k.ln2_mean, k.ln2_rstd);
    if (recompute_ == Recompute::Attn) {
      ln1_forward(l, N, false, hooks);
      attn_forward(l, B_, T_, false, hooks);
    }
    {
      const ModuleScope attn(hooks, m.attn, true);
      linear(m.attn_proj, datty_, dres_, k.atty, nullptr, A, C);
      ops_.attention_backward(dwide_, datty_, k.qkv, k.atty, k.lse, B_, T_, A, NH);
      linear(m.c_attn, dln_, dwide_, k.ln1, nullptr, C, 3 * A);
    }
    layernorm(m.ln_1, dln_, k.r_in, k.ln1_mean, k.ln1_rstd);
  }
  if (!table_.has_embeddings()) {
    ops_.copy(s.dinput, row(dres_, first), static_cast<size_t>(R) * C * es_);
    // The head's copy of wte: its gradient is complete with the stage's backward.
    if (table_.has_head()) hooks.grad_ready(0);
    return;
  }
  {
    const ModuleScope wpe(hooks, wpe_, true);
    gather_rows(wpe_, true, dres_, N, hooks);
    ops_.encoder_backward(nullptr, hooks.grad(1), dres_, s.tokens, B_, T_, C);
    hooks.grad_ready(1);
  }
  const ModuleScope wte(hooks, wte_, true);
  if (vocab_split())
    ops_.embedding_rows_backward(hooks.grad(0), dres_, s.tokens, table_.vocab_begin(),
                                 table_.vocab_rows(), N, C);
  else ops_.encoder_backward(hooks.grad(0), nullptr, dres_, s.tokens, B_, T_, C);
  hooks.grad_ready(0);
}

double GPT::loss_sum(int n) {
  if (!table_.has_head()) return 0;
  ops_.to_host(host_losses_.data(), slot_->losses, n * sizeof(float));
  double sum = 0;
  for (int i = 0; i < n; i++) sum += host_losses_[i];
  return sum;
}

double GPT::stage_loss_sum(int slot) {
  slot_ = &slots_[static_cast<size_t>(slot)];
  return loss_sum(B_ * T_);
}

double GPT::forward_backward(const int* inputs, const int* targets, float dloss,
                             ModuleHooks& hooks) {
  stage_forward(0, inputs, targets, Head::TrainLoss, dloss, hooks);
  stage_backward(0, hooks);
  return loss_sum(B_ * T_);
}

double GPT::forward_loss(const int* inputs, const int* targets, ModuleHooks& hooks) {
  stage_forward(0, inputs, targets, Head::EvalLoss, 0.0f, hooks);
  return loss_sum(B_ * T_);
}

std::vector<float> GPT::forward_logits(const int* inputs, int b, int t, int pos,
                                       ModuleHooks& hooks) {
  const int V = table_.config().vocab_size, rows = table_.vocab_rows();
  slot_ = &slots_.front();
  upload_tokens(inputs, nullptr, b * t);
  {
    const ModuleScope root(hooks, root_, false);
    forward_to_lnf(b, t, hooks);
    if (!table_.has_head()) return {};
    forward_head(b * t, Head::Logits, 0.0f, hooks);
  }
  std::vector<float> out(static_cast<size_t>(b) * V);
  float* scratch = static_cast<float*>(
      ops_.alloc(static_cast<size_t>(V) * sizeof(float), MemCategory::Activations));
  for (int r = 0; r < b; r++) {
    const char* row =
        static_cast<const char*>(slot_->logits) + (static_cast<size_t>(r) * t + pos) * rows * es_;
    // A shard holds its vocabulary rows: it places them in a zeroed row of
    // the whole vocabulary, and the sum over shards is the whole row.
    if (vocab_split()) ops_.memzero(scratch, static_cast<size_t>(V) * sizeof(float));
    ops_.to_f32(scratch + table_.vocab_begin(), row, rows);
    if (vocab_split()) hooks.combine(lm_head_, false, Combine::SumFloats, scratch, V);
    ops_.to_host(out.data() + static_cast<size_t>(r) * V, scratch, V * sizeof(float));
  }
  ops_.release(scratch);
  return out;
}

}  // namespace zt
