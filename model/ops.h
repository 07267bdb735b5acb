// The op set every backend implements: storage plus the transformer's kernels.
// Model-dtype buffers (params, grads, activations) are passed as void*: fp32 on
// the CPU backend, bf16 on the CUDA backend. Side buffers the kernels keep in
// fp32 (layernorm statistics, attention log-sum-exp, losses, optimizer state) are
// float*. All pointers live in the backend's memory space (host or device).
//
// Accumulation contract (what lets ZeRO own the gradient storage): every
// parameter-gradient output (dw, db, dwte, dwpe) is ADDED to (+=); activation
// gradients are written (=) unless the comment says +=.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "model/memory_ledger.h"

namespace zt {

// Model dtypes are F32 (CPU) and BF16 (CUDA); F16 and F64 occur only on the
// wire (zero.communication_data_type, stage 3's float64 gradient norms), I64
// only in broadcasts (stage 3's trace check).
enum class DType { F32, BF16, F16, F64, I64, I8, U8 };
inline size_t dtype_size(DType t) {
  return t == DType::F64 || t == DType::I64 ? 8
         : t == DType::F32                  ? 4
         : t == DType::I8 || t == DType::U8 ? 1
                                            : 2;
}
inline const char* dtype_name(DType t) {
  static const char* names[] = {"fp32", "bf16", "fp16", "fp64", "int64", "int8", "uint8"};
  return names[static_cast<int>(t)];
}

class DeviceServices;

struct AdamWArgs {
  float lr, beta1, beta2, eps, weight_decay;
  float grad_scale;  // multiplies the gradient before use (clipping factor)
  int t;             // step number, from 1, for bias correction
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual std::string name() const = 0;  // "cpu" or "cuda"
  virtual DType dtype() const = 0;       // dtype of params, grads, activations
  virtual bool on_device() const = 0;    // true when pointers are device memory
  MemoryLedger& ledger() { return ledger_; }
  // What the backend offers ZeRO beside these ops (model/device_services.h):
  // host memory, asynchronous host copies, conversion, quantization.
  virtual DeviceServices& services() = 0;

  // ---- memory (every allocation is counted by category; returned zeroed) ----
  virtual void* alloc(size_t bytes, MemCategory cat) = 0;
  virtual void release(void* p) = 0;
  virtual void memzero(void* p, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void from_host(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void synchronize() = 0;

  // ---- elementwise helpers on model-dtype buffers ----
  virtual void to_f32(float* dst, const void* src, size_t n) = 0;    // widen
  virtual void from_f32(void* dst, const float* src, size_t n) = 0;  // round to nearest

  // ---- transformer ops (shapes: N = B*T rows, C channels) ----
  // out[B,T,C] = wte[tokens] + wpe[t]. Either table may be null: with wpe null
  // out = wte[tokens]; with wte null out += wpe[t] in place (the two calls in
  // turn give the fused result bit for bit).
  virtual void encoder_forward(void* out, const int* tokens, const void* wte, const void* wpe,
                               int B, int T, int C) = 0;
  // dwte[token] += dout, dwpe[t] += sum over batch; deterministic order. Either
  // gradient may be null, and is then skipped.
  virtual void encoder_backward(void* dwte, void* dwpe, const void* dout, const int* tokens, int B,
                                int T, int C) = 0;
  // out = (inp - mean) * rstd * w + b; saves mean, rstd [N]
  virtual void layernorm_forward(void* out, float* mean, float* rstd, const void* inp,
                                 const void* w, const void* b, int N, int C) = 0;
  // residual = a + b; out = layernorm(residual)
  virtual void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd,
                                          const void* a, const void* b, const void* w,
                                          const void* bias, int N, int C) = 0;
  // dinp += ..., dw += ..., db += ...
  virtual void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp,
                                  const void* w, const float* mean, const float* rstd, int N,
                                  int C) = 0;
  // out[N,OC] = inp[N,C] @ w[OC,C]^T + bias[OC] (bias may be null).
  // With pre_gelu non-null: pre_gelu = that product, out = gelu(pre_gelu) (tanh form).
  virtual void matmul_forward(void* out, void* pre_gelu, const void* inp, const void* w,
                              const void* bias, int N, int C, int OC) = 0;
  // dinp[N,C] = dout @ w (dinp may be null); dw += dout^T @ inp; dbias += colsum(dout) (may be
  // null). With inp_pre_gelu non-null (inp = gelu(inp_pre_gelu)): dinp is further multiplied by
  // gelu'(inp_pre_gelu), i.e. it is the gradient of the pre-activation.
  virtual void matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp,
                               const void* w, const void* inp_pre_gelu, int N, int C, int OC) = 0;
  // Causal multi-head attention. qkv[B,T,3C] holds q|k|v, heads of size C/NH inside each.
  // out[B,T,C]; lse[B,NH,T] = log-sum-exp of each query row's scaled scores (for backward).
  virtual void attention_forward(void* out, float* lse, const void* qkv, int B, int T, int C,
                                 int NH) = 0;
  // dqkv = gradient of qkv (written), from dout, recomputing the scores from qkv and lse.
  virtual void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out,
                                  const float* lse, int B, int T, int C, int NH) = 0;
  // Fused softmax + cross-entropy + gradient, in place over logits[N,V]:
  // losses[i] = -log softmax(logits[i])[targets[i]];
  // logits[i] <- dloss * (softmax(logits[i]) - onehot(targets[i])).
  virtual void cross_entropy_forward_backward(float* losses, void* logits, const int* targets,
                                              int N, int V, float dloss) = 0;
  // Forward only (eval): losses, logits left unchanged.
  virtual void cross_entropy_forward(float* losses, const void* logits, const int* targets, int N,
                                     int V) = 0;

  // ---- vocabulary-parallel embedding and loss (tensor parallelism splits the
  // vocabulary: this table/shard holds token rows [row_begin, row_begin + rows)) ----
  // out[n, :] = table[tokens[n] - row_begin, :] for tokens inside the shard, 0 otherwise (written).
  // N = B*T rows.
  virtual void embedding_rows_forward(void* out, const int* tokens, const void* table,
                                      int row_begin, int rows, int N, int C) = 0;
  // dtable[tokens[n] - row_begin, :] += dout[n, :] for tokens inside; deterministic order (same
  // result every run).
  virtual void embedding_rows_backward(void* dtable, const void* dout, const int* tokens,
                                       int row_begin, int rows, int N, int C) = 0;
  // lse[n] = log(sum over the shard's V columns of exp(logits[n, v])), fp32, numerically stable
  // (max subtracted). A shard of V = 0 columns gives -inf.
  virtual void logits_logsumexp(float* lse, const void* logits, int N, int V) = 0;
  // picked[n] = logits[n, targets[n] - col_begin] when col_begin <= targets[n] < col_begin + V,
  // else 0 (fp32).
  virtual void logits_pick(float* picked, const void* logits, const int* targets, int col_begin,
                           int N, int V) = 0;
  // lse[n] <- the log-sum-exp of parts[p * N + n] over p in [0, n_parts) (merging the shards'
  // lse), stable; -inf parts (empty shards) drop out. lse may be parts itself (the first part is
  // then overwritten with the merged values).
  virtual void logsumexp_merge(float* lse, const float* parts, int n_parts, int N) = 0;
  // losses[n] = lse[n] - picked[n]   (lse over the WHOLE vocabulary, picked the target's logit)
  virtual void losses_from_lse(float* losses, const float* lse, const float* picked, int N) = 0;
  // In place over this shard's logits[N, V]:
  // logits[n, v] <- dloss * (exp(logits[n, v] - lse[n]) - (v + col_begin == targets[n] ? 1 : 0)),
  // lse[n] the log-sum-exp over the WHOLE vocabulary.
  virtual void cross_entropy_backward_from_lse(void* logits, const float* lse, const int* targets,
                                               int col_begin, int N, int V, float dloss) = 0;

  // ---- optimizer (fp32 master weights and state; param is model dtype) ----
  // One contiguous segment with a single weight-decay value.
  virtual void adamw(void* param, float* master, const void* grad, float* m, float* v, size_t n,
                     const AdamWArgs& a) = 0;
  // sum of squares of a model-dtype buffer, accumulated in double/fp32, returned to the host
  virtual double sum_squares(const void* x, size_t n) = 0;

 private:
  MemoryLedger ledger_;
};

// "cpu" or "cuda"; local_rank picks the GPU. Throws std::runtime_error with a
// one-line reason when the device is unavailable.
std::unique_ptr<Ops> make_cpu_ops();
std::unique_ptr<Ops> make_cuda_ops(int local_rank);
bool cuda_available(std::string* why_not);

}  // namespace zt
