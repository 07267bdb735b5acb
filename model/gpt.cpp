#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace zt {

GPT::GPT(const ParamTable& table, Ops& ops, int B, int T, Recompute recompute)
    : table_(table), ops_(ops), B_(B), T_(T), recompute_(recompute), es_(dtype_size(ops.dtype())) {
  const GPTConfig& c = table.config();
  const size_t N = static_cast<size_t>(B) * T, C = c.n_embd, NH = table.heads();
  const size_t A = table.attn_width(), F = table.mlp_width();
  const bool share_attention = recompute == Recompute::Attn || recompute == Recompute::Block;
  const bool share_residual = recompute == Recompute::Block;
  const bool share_mlp = recompute == Recompute::Mlp || recompute == Recompute::Block;
  embed_ = act(N * C);
  blocks_.resize(c.n_layer);
  for (int l = 0; l < c.n_layer; l++) {
    Block& b = blocks_[l];
    b.r_in = l == 0 ? embed_ : act(N * C);
    if (l == 0 || !share_attention) {
      b.ln1 = act(N * C);
      b.qkv = act(N * 3 * A);
      b.atty = act(N * A);
      b.ln1_mean = stat(N);
      b.ln1_rstd = stat(N);
      b.lse = stat(N * NH);
    } else {
      b.ln1 = blocks_[0].ln1;
      b.qkv = blocks_[0].qkv;
      b.atty = blocks_[0].atty;
      b.ln1_mean = blocks_[0].ln1_mean;
      b.ln1_rstd = blocks_[0].ln1_rstd;
      b.lse = blocks_[0].lse;
    }
    if (l == 0 || !share_residual) {
      b.r_mid = act(N * C);
      b.ln2 = act(N * C);
      b.ln2_mean = stat(N);
      b.ln2_rstd = stat(N);
    } else {
      b.r_mid = blocks_[0].r_mid;
      b.ln2 = blocks_[0].ln2;
      b.ln2_mean = blocks_[0].ln2_mean;
      b.ln2_rstd = blocks_[0].ln2_rstd;
    }
    if (l == 0 || !share_mlp) {
      b.fch = act(N * F);
      b.fcg = act(N * F);
    } else {
      b.fch = blocks_[0].fch;
      b.fcg = blocks_[0].fcg;
    }
  }
  fcproj_ = act(N * C);
  r_fin_ = act(N * C);
  lnf_ = act(N * C);
  logits_ = act(N * table.vocab_rows());
  lnf_mean_ = stat(N);
  lnf_rstd_ = stat(N);
  losses_ = stat(N);
  if (vocab_split()) {
    lse_ = stat(N);
    picked_ = stat(N);
  }
  tokens_ = static_cast<int*>(ops_.alloc(N * sizeof(int), MemCategory::Activations));
  targets_ = static_cast<int*>(ops_.alloc(N * sizeof(int), MemCategory::Activations));
  allocations_.push_back(tokens_);
  allocations_.push_back(targets_);
  dres_ = act(N * C);
  dln_ = act(N * C);
  datty_ = act(N * A);
  dwide_ = act(N * std::max(3 * A, F));
  host_losses_.resize(N);
  auto m = [&](const std::string& name) { return table.module_index(name); };
  root_ = m("");
  wte_ = m("wte");
  wpe_ = m("wpe");
  ln_f_ = m("ln_f");
  lm_head_ = m("lm_head");
  for (int l = 0; l < c.n_layer; l++) {
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
  ops_.from_host(tokens_, inputs, n * sizeof(int));
  if (targets) ops_.from_host(targets_, targets, n * sizeof(int));
}

// The forward of b x t tokens, the root module open throughout.
void GPT::forward(int b, int t, Head head, float dloss, ModuleHooks& hooks) {
  const ModuleScope root(hooks, root_, false);
  forward_to_lnf(b, t, hooks);
  forward_head(b * t, head, dloss, hooks);
}

// The forward from the embeddings to the final LayerNorm, leaving lnf_ ready
// for the head; every module's parameters are fetched just before it runs and
// released after.
void GPT::forward_to_lnf(int b, int t, ModuleHooks& hooks) {
  const GPTConfig& c = table_.config();
  const int N = b * t, C = c.n_embd;
  // The two embeddings are separate modules, as in PyTorch: lookup, then the
  // position add in place (bit-identical to one fused add).
  {
    const ModuleScope wte(hooks, wte_, false);
    if (vocab_split()) {
      ops_.embedding_rows_forward(embed_, tokens_, wte[0], table_.vocab_begin(),
                                  table_.vocab_rows(), N, C);
      hooks.combine(wte_, false, Combine::Sum, embed_, static_cast<size_t>(N) * C);
    } else {
      ops_.encoder_forward(embed_, tokens_, wte[0], nullptr, b, t, C);
    }
  }
  {
    const ModuleScope wpe(hooks, wpe_, false);
    ops_.encoder_forward(embed_, tokens_, nullptr, wpe[0], b, t, C);
  }
  for (int l = 0; l < c.n_layer; l++) block_forward(l, b, t, false, hooks);
  const ModuleScope lnf(hooks, ln_f_, false);
  ops_.residual_layernorm_forward(r_fin_, lnf_, lnf_mean_, lnf_rstd_, blocks_.back().r_mid, fcproj_,
                                  lnf[0], lnf[1], N, C);
}

// A recompute runs the whole block but the MLP's projection, from the kept
// input; the attention projection's output goes through fcproj_, which the
// backward does not read.
void GPT::block_forward(int l, int b, int t, bool recompute, ModuleHooks& hooks) {
  const int N = b * t;
  const ModuleScope block(hooks, block_modules_[l].block, false);
  ln1_forward(l, N, !recompute && l > 0, hooks);
  attn_forward(l, b, t, true, hooks);
  ln2_forward(l, N, hooks);
  mlp_forward(l, N, !recompute, hooks);
}

void GPT::ln1_forward(int l, int n, bool add_residual, ModuleHooks& hooks) {
  const int C = table_.config().n_embd;
  Block& k = blocks_[l];
  const ModuleScope w(hooks, block_modules_[l].ln_1, false);
  if (add_residual)
    ops_.residual_layernorm_forward(k.r_in, k.ln1, k.ln1_mean, k.ln1_rstd, blocks_[l - 1].r_mid,
                                    fcproj_, w[0], w[1], n, C);
  else ops_.layernorm_forward(k.ln1, k.ln1_mean, k.ln1_rstd, k.r_in, w[0], w[1], n, C);
}

void GPT::attn_forward(int l, int b, int t, bool project, ModuleHooks& hooks) {
  const int N = b * t, C = table_.config().n_embd, NH = table_.heads(), A = table_.attn_width();
  Block& k = blocks_[l];
  const BlockModules& m = block_modules_[l];
  const ModuleScope attn(hooks, m.attn, false);
  {
    const ModuleScope qkv(hooks, m.c_attn, false);
    ops_.matmul_forward(k.qkv, nullptr, k.ln1, qkv[0], qkv[1], N, C, 3 * A);
  }
  ops_.attention_forward(k.atty, k.lse, k.qkv, b, t, A, NH);
  if (project) {
    // fcproj_ doubles as scratch for the attention projection: it is consumed at once.
    const ModuleScope proj(hooks, m.attn_proj, false);
    ops_.matmul_forward(fcproj_, nullptr, k.atty, proj[0], proj[1], N, A, C);
    hooks.combine(m.attn_proj, false, Combine::Sum, fcproj_, static_cast<size_t>(N) * C);
  }
}

void GPT::ln2_forward(int l, int n, ModuleHooks& hooks) {
  const int C = table_.config().n_embd;
  Block& k = blocks_[l];
  const ModuleScope w(hooks, block_modules_[l].ln_2, false);
  ops_.residual_layernorm_forward(k.r_mid, k.ln2, k.ln2_mean, k.ln2_rstd, k.r_in, fcproj_, w[0],
                                  w[1], n, C);
}

void GPT::mlp_forward(int l, int n, bool project, ModuleHooks& hooks) {
  const int C = table_.config().n_embd, F = table_.mlp_width();
  Block& k = blocks_[l];
  const BlockModules& m = block_modules_[l];
  const ModuleScope mlp(hooks, m.mlp, false);
  {
    const ModuleScope fc(hooks, m.c_fc, false);
    ops_.matmul_forward(k.fcg, k.fch, k.ln2, fc[0], fc[1], n, C, F);
  }
  if (project) {
    const ModuleScope fcp(hooks, m.mlp_proj, false);
    ops_.matmul_forward(fcproj_, nullptr, k.fcg, fcp[0], fcp[1], n, F, C);
    hooks.combine(m.mlp_proj, false, Combine::Sum, fcproj_, static_cast<size_t>(n) * C);
  }
}

void GPT::forward_head(int n, Head head, float dloss, ModuleHooks& hooks) {
  const GPTConfig& c = table_.config();
  {
    const ModuleScope wte(hooks, lm_head_, false);
    ops_.matmul_forward(logits_, nullptr, lnf_, wte[0], nullptr, n, c.n_embd, table_.vocab_rows());
  }
  if (head == Head::Logits) return;
  if (vocab_split()) {
    split_cross_entropy(n, head == Head::TrainLoss, dloss, hooks);
    return;
  }
  if (head == Head::TrainLoss)
    ops_.cross_entropy_forward_backward(losses_, logits_, targets_, n, c.vocab_size, dloss);
  else if (head == Head::EvalLoss)
    ops_.cross_entropy_forward(losses_, logits_, targets_, n, c.vocab_size);
}

// The loss over a vocabulary split across shards: each shard's log-sum-exp
// over its rows and the target's logit (on the shard holding it) are combined
// across shards; no shard ever holds the whole logits.
void GPT::split_cross_entropy(int n, bool with_gradient, float dloss, ModuleHooks& hooks) {
  const int V = table_.vocab_rows(), begin = table_.vocab_begin();
  ops_.logits_logsumexp(lse_, logits_, n, V);
  hooks.combine(lm_head_, false, Combine::LogSumExp, lse_, n);
  ops_.logits_pick(picked_, logits_, targets_, begin, n, V);
  hooks.combine(lm_head_, false, Combine::SumFloats, picked_, n);
  ops_.losses_from_lse(losses_, lse_, picked_, n);
  if (with_gradient)
    ops_.cross_entropy_backward_from_lse(logits_, lse_, targets_, begin, n, V, dloss);
}

void GPT::backward(ModuleHooks& hooks) {
  const GPTConfig& c = table_.config();
  const int N = B_ * T_, C = c.n_embd, NH = table_.heads(), V = table_.vocab_rows();
  const int A = table_.attn_width(), F = table_.mlp_width();
  const ModuleScope root(hooks, root_, true);
  {
    // The LM head adds into wte's gradient, which completes only at the embedding.
    const ModuleScope head(hooks, lm_head_, true);
    ops_.matmul_backward(dln_, hooks.grad(0), nullptr, logits_, lnf_, head[0], nullptr, N, C, V);
    hooks.combine(lm_head_, true, Combine::Sum, dln_, static_cast<size_t>(N) * C);
  }

  // dres_ carries the gradient of the residual stream backwards through the blocks.
  auto layernorm = [&](int module, void* dout_in, void* inp, const float* mean, const float* rstd) {
    const ModuleScope w(hooks, module, true);
    const std::vector<int>& p = table_.modules()[module].params;
    ops_.layernorm_backward(dres_, hooks.grad(p[0]), hooks.grad(p[1]), dout_in, inp, w[0], mean,
                            rstd, N, C);
    hooks.grad_ready(p[0]);
    hooks.grad_ready(p[1]);
  };
  // A projection whose weight keeps only its shard's output rows leaves a
  // partial input gradient, combined across shards.
  auto linear = [&](int module, void* dinp, const void* dout, const void* inp, const void* pre_gelu,
                    int in, int out) {
    const ModuleScope w(hooks, module, true);
    const std::vector<int>& p = table_.modules()[module].params;
    ops_.matmul_backward(dinp, hooks.grad(p[0]), hooks.grad(p[1]), dout, inp, w[0], pre_gelu, N, in,
                         out);
    const ShardCut cut = table_.params()[p[0]].cut;
    if (cut == ShardCut::Rows || cut == ShardCut::QkvRows)
      hooks.combine(module, true, Combine::Sum, dinp, static_cast<size_t>(N) * in);
    hooks.grad_ready(p[1]);
    hooks.grad_ready(p[0]);
  };
  ops_.memzero(dres_, static_cast<size_t>(N) * C * es_);
  layernorm(ln_f_, dln_, r_fin_, lnf_mean_, lnf_rstd_);
  for (int l = c.n_layer - 1; l >= 0; l--) {
    Block& k = blocks_[l];
    const BlockModules& m = block_modules_[l];
    if (recompute_ == Recompute::Block) block_forward(l, B_, T_, true, hooks);
    const ModuleScope block(hooks, m.block, true);
    if (recompute_ == Recompute::Mlp) mlp_forward(l, N, false, hooks);
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
  {
    const ModuleScope wpe(hooks, wpe_, true);
    ops_.encoder_backward(nullptr, hooks.grad(1), dres_, tokens_, B_, T_, C);
    hooks.grad_ready(1);
  }
  const ModuleScope wte(hooks, wte_, true);
  if (vocab_split())
    ops_.embedding_rows_backward(hooks.grad(0), dres_, tokens_, table_.vocab_begin(),
                                 table_.vocab_rows(), N, C);
  else ops_.encoder_backward(hooks.grad(0), nullptr, dres_, tokens_, B_, T_, C);
  hooks.grad_ready(0);
}

double GPT::loss_sum(int n) {
  ops_.to_host(host_losses_.data(), losses_, n * sizeof(float));
  double sum = 0;
  for (int i = 0; i < n; i++) sum += host_losses_[i];
  return sum;
}

double GPT::forward_backward(const int* inputs, const int* targets, float dloss,
                             ModuleHooks& hooks) {
  const int N = B_ * T_;
  upload_tokens(inputs, targets, N);
  forward(B_, T_, Head::TrainLoss, dloss, hooks);
  backward(hooks);
  return loss_sum(N);
}

double GPT::forward_loss(const int* inputs, const int* targets, ModuleHooks& hooks) {
  const int N = B_ * T_;
  upload_tokens(inputs, targets, N);
  forward(B_, T_, Head::EvalLoss, 0.0f, hooks);
  return loss_sum(N);
}

std::vector<float> GPT::forward_logits(const int* inputs, int b, int t, int pos,
                                       ModuleHooks& hooks) {
  const int V = table_.config().vocab_size;
  upload_tokens(inputs, nullptr, b * t);
  forward(b, t, Head::Logits, 0.0f, hooks);
  std::vector<float> out(static_cast<size_t>(b) * V);
  float* scratch = static_cast<float*>(
      ops_.alloc(static_cast<size_t>(V) * sizeof(float), MemCategory::Activations));
  for (int r = 0; r < b; r++) {
    const char* row =
        static_cast<const char*>(logits_) + (static_cast<size_t>(r) * t + pos) * V * es_;
    ops_.to_f32(scratch, row, V);
    ops_.to_host(out.data() + static_cast<size_t>(r) * V, scratch, V * sizeof(float));
  }
  ops_.release(scratch);
  return out;
}

}  // namespace zt
