#include "model/gpt.h"

#include <cmath>
#include <cstring>

namespace zt {

GPT::GPT(const ParamTable& table, Ops& ops, int B, int T)
    : table_(table), ops_(ops), B_(B), T_(T), es_(dtype_size(ops.dtype())) {
  const GPTConfig& c = table.config();
  const size_t N = static_cast<size_t>(B) * T, C = c.n_embd, NH = c.n_head;
  embed_ = act(N * C);
  blocks_.resize(c.n_layer);
  for (int l = 0; l < c.n_layer; l++) {
    Block& b = blocks_[l];
    b.r_in = l == 0 ? embed_ : act(N * C);
    b.ln1 = act(N * C);
    b.qkv = act(N * 3 * C);
    b.atty = act(N * C);
    b.r_mid = act(N * C);
    b.ln2 = act(N * C);
    b.fch = act(N * 4 * C);
    b.fcg = act(N * 4 * C);
    b.ln1_mean = stat(N);
    b.ln1_rstd = stat(N);
    b.ln2_mean = stat(N);
    b.ln2_rstd = stat(N);
    b.lse = stat(N * NH);
  }
  fcproj_ = act(N * C);
  r_fin_ = act(N * C);
  lnf_ = act(N * C);
  logits_ = act(N * c.vocab_size);
  lnf_mean_ = stat(N);
  lnf_rstd_ = stat(N);
  losses_ = stat(N);
  tokens_ = static_cast<int*>(ops_.alloc(N * sizeof(int), MemCategory::Activations));
  targets_ = static_cast<int*>(ops_.alloc(N * sizeof(int), MemCategory::Activations));
  allocations_.push_back(tokens_);
  allocations_.push_back(targets_);
  dres_ = act(N * C);
  dln_ = act(N * C);
  datty_ = act(N * C);
  dwide_ = act(N * 4 * C);
  host_losses_.resize(N);
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

const void* GPT::param(const void* unit_base, int i) const {
  return static_cast<const char*>(unit_base) + table_.offset_in_unit(i) * es_;
}

void* GPT::grad(void* unit_base, int i) const {
  return static_cast<char*>(unit_base) + table_.offset_in_unit(i) * es_;
}

void GPT::upload_tokens(const int* inputs, const int* targets, int n) {
  ops_.from_host(tokens_, inputs, n * sizeof(int));
  if (targets) ops_.from_host(targets_, targets, n * sizeof(int));
}

// Runs embeddings, all blocks and the final LayerNorm; leaves lnf_ ready for the
// head. Each unit's parameters are acquired just before use and released after.
void GPT::forward_to_lnf(int b, int t, UnitHooks& hooks) {
  const GPTConfig& c = table_.config();
  const int N = b * t, C = c.n_embd, NH = c.n_head;
  const void* p0 = hooks.acquire_params(0);
  ops_.encoder_forward(embed_, tokens_, param(p0, 0), param(p0, 1), b, t, C);
  hooks.release_params(0);
  for (int l = 0; l < c.n_layer; l++) {
    Block& k = blocks_[l];
    const void* p = hooks.acquire_params(1 + l);
    auto W = [&](BlockParam which) { return param(p, table_.block_param(l, which)); };
    if (l == 0)
      ops_.layernorm_forward(k.ln1, k.ln1_mean, k.ln1_rstd, k.r_in, W(kLn1W), W(kLn1B), N, C);
    else
      ops_.residual_layernorm_forward(k.r_in, k.ln1, k.ln1_mean, k.ln1_rstd, blocks_[l - 1].r_mid,
                                      fcproj_, W(kLn1W), W(kLn1B), N, C);
    ops_.matmul_forward(k.qkv, nullptr, k.ln1, W(kQkvW), W(kQkvB), N, C, 3 * C);
    ops_.attention_forward(k.atty, k.lse, k.qkv, b, t, C, NH);
    // fcproj_ doubles as scratch for the attention projection: it is consumed at once.
    ops_.matmul_forward(fcproj_, nullptr, k.atty, W(kAttProjW), W(kAttProjB), N, C, C);
    ops_.residual_layernorm_forward(k.r_mid, k.ln2, k.ln2_mean, k.ln2_rstd, k.r_in, fcproj_,
                                    W(kLn2W), W(kLn2B), N, C);
    ops_.matmul_forward(k.fcg, k.fch, k.ln2, W(kFcW), W(kFcB), N, C, 4 * C);
    ops_.matmul_forward(fcproj_, nullptr, k.fcg, W(kFcProjW), W(kFcProjB), N, 4 * C, C);
    hooks.release_params(1 + l);
  }
  const int fu = table_.final_unit();
  const void* pf = hooks.acquire_params(fu);
  const int lnf_w = table_.units()[fu].first_param;
  ops_.residual_layernorm_forward(r_fin_, lnf_, lnf_mean_, lnf_rstd_, blocks_.back().r_mid, fcproj_,
                                  param(pf, lnf_w), param(pf, lnf_w + 1), N, C);
  hooks.release_params(fu);
}

double GPT::forward_backward(const int* inputs, const int* targets, float dloss, UnitHooks& hooks) {
  const GPTConfig& c = table_.config();
  const int N = B_ * T_, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  upload_tokens(inputs, targets, N);
  forward_to_lnf(B_, T_, hooks);

  // Head: the LM head reads the tied token embedding of unit 0, and its gradient
  // goes into unit 0's gradient space, which stays acquired until the embedding
  // backward completes it at the very end.
  const void* p0 = hooks.acquire_params(0);
  void* g0 = hooks.acquire_grads(0);
  ops_.matmul_forward(logits_, nullptr, lnf_, param(p0, 0), nullptr, N, C, V);
  ops_.cross_entropy_forward_backward(losses_, logits_, targets_, N, V, dloss);
  ops_.matmul_backward(dln_, grad(g0, 0), nullptr, logits_, lnf_, param(p0, 0), nullptr, N, C, V);
  hooks.release_params(0);

  const int fu = table_.final_unit();
  const int lnf_w = table_.units()[fu].first_param;
  const void* pf = hooks.acquire_params(fu);
  void* gf = hooks.acquire_grads(fu);
  ops_.memzero(dres_, static_cast<size_t>(N) * C * es_);
  ops_.layernorm_backward(dres_, grad(gf, lnf_w), grad(gf, lnf_w + 1), dln_, r_fin_,
                          param(pf, lnf_w), lnf_mean_, lnf_rstd_, N, C);
  hooks.grads_ready(fu);
  hooks.release_params(fu);

  // dres_ carries the gradient of the residual stream backwards through the blocks.
  for (int l = c.n_layer - 1; l >= 0; l--) {
    Block& k = blocks_[l];
    const void* p = hooks.acquire_params(1 + l);
    void* g = hooks.acquire_grads(1 + l);
    auto W = [&](BlockParam which) { return param(p, table_.block_param(l, which)); };
    auto G = [&](BlockParam which) { return grad(g, table_.block_param(l, which)); };
    ops_.matmul_backward(dwide_, G(kFcProjW), G(kFcProjB), dres_, k.fcg, W(kFcProjW), k.fch, N,
                         4 * C, C);
    ops_.matmul_backward(dln_, G(kFcW), G(kFcB), dwide_, k.ln2, W(kFcW), nullptr, N, C, 4 * C);
    ops_.layernorm_backward(dres_, G(kLn2W), G(kLn2B), dln_, k.r_mid, W(kLn2W), k.ln2_mean,
                            k.ln2_rstd, N, C);
    ops_.matmul_backward(datty_, G(kAttProjW), G(kAttProjB), dres_, k.atty, W(kAttProjW), nullptr,
                         N, C, C);
    ops_.attention_backward(dwide_, datty_, k.qkv, k.atty, k.lse, B_, T_, C, NH);
    ops_.matmul_backward(dln_, G(kQkvW), G(kQkvB), dwide_, k.ln1, W(kQkvW), nullptr, N, C, 3 * C);
    ops_.layernorm_backward(dres_, G(kLn1W), G(kLn1B), dln_, k.r_in, W(kLn1W), k.ln1_mean,
                            k.ln1_rstd, N, C);
    hooks.grads_ready(1 + l);
    hooks.release_params(1 + l);
  }
  ops_.encoder_backward(grad(g0, 0), grad(g0, 1), dres_, tokens_, B_, T_, C);
  hooks.grads_ready(0);

  ops_.to_host(host_losses_.data(), losses_, N * sizeof(float));
  double sum = 0;
  for (int i = 0; i < N; i++) sum += host_losses_[i];
  return sum;
}

std::vector<int> GPT::training_unit_order(int n_layer) {
  std::vector<int> order;
  for (int u = 0; u <= n_layer + 1; u++) order.push_back(u);
  order.push_back(0);
  order.push_back(n_layer + 1);
  for (int u = n_layer; u >= 1; u--) order.push_back(u);
  return order;
}

double GPT::forward_loss(const int* inputs, const int* targets, UnitHooks& hooks) {
  const GPTConfig& c = table_.config();
  const int N = B_ * T_;
  upload_tokens(inputs, targets, N);
  forward_to_lnf(B_, T_, hooks);
  const void* p0 = hooks.acquire_params(0);
  ops_.matmul_forward(logits_, nullptr, lnf_, param(p0, 0), nullptr, N, c.n_embd, c.vocab_size);
  hooks.release_params(0);
  ops_.cross_entropy_forward(losses_, logits_, targets_, N, c.vocab_size);
  ops_.to_host(host_losses_.data(), losses_, N * sizeof(float));
  double sum = 0;
  for (int i = 0; i < N; i++) sum += host_losses_[i];
  return sum;
}

std::vector<float> GPT::forward_logits(const int* inputs, int b, int t, int pos, UnitHooks& hooks) {
  const GPTConfig& c = table_.config();
  const int C = c.n_embd, V = c.vocab_size;
  upload_tokens(inputs, nullptr, b * t);
  forward_to_lnf(b, t, hooks);
  const void* p0 = hooks.acquire_params(0);
  ops_.matmul_forward(logits_, nullptr, lnf_, param(p0, 0), nullptr, b * t, C, V);
  hooks.release_params(0);
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
