// The CPU backend: fp32 everywhere, host memory, every op the float instantiation
// of the reference kernels in cpu_kernels.h and cpu_vocab_parallel.h (matmuls
// through cpu_matmul).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/cpu/cpu_kernels.h"
#include "model/cpu/cpu_quantize.h"
#include "model/cpu/cpu_vocab_parallel.h"
#include "model/device_services.h"
#include "model/host_floats.h"
#include "model/ops.h"

namespace zt {
namespace {

constexpr size_t kAlignment = 64;  // a cache line, and enough for any SIMD load

const float* f32(const void* p) { return static_cast<const float*>(p); }

float load(const void* p, DType t, size_t i) {
  if (t == DType::F32) return static_cast<const float*>(p)[i];
  const uint16_t raw = static_cast<const uint16_t*>(p)[i];
  if (t == DType::BF16) return bf16_to_float(raw);
  if (t == DType::F16) return fp16_to_float(raw);
  throw std::logic_error("convert: fp64 buffers are not converted");
}

void store(void* p, DType t, size_t i, float x) {
  if (t == DType::F32) static_cast<float*>(p)[i] = x;
  else if (t == DType::BF16) static_cast<uint16_t*>(p)[i] = float_to_bf16(x);
  else if (t == DType::F16) static_cast<uint16_t*>(p)[i] = float_to_fp16(x);
  else throw std::logic_error("convert: fp64 buffers are not converted");
}
float* f32(void* p) { return static_cast<float*>(p); }

void* aligned_zeroed(size_t bytes, MemCategory cat) {
  size_t padded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, padded);
  if (!p) {
    throw std::runtime_error("cpu alloc: out of host memory allocating " + std::to_string(bytes) +
                             " bytes for " + mem_category_name(cat));
  }
  std::memset(p, 0, padded);
  return p;
}

class CpuOps final : public Ops, public DeviceServices {
 public:
  std::string name() const override { return "cpu"; }
  DType dtype() const override { return DType::F32; }
  bool on_device() const override { return false; }

  // Rounded up to the alignment (aligned_alloc requires a multiple of it); at
  // least one line so that every call returns a distinct, freeable pointer.
  void* alloc(size_t bytes, MemCategory cat) override {
    void* p = aligned_zeroed(bytes, cat);
    ledger().on_alloc(p, bytes, cat);
    return p;
  }
  void release(void* p) override {
    if (!p) return;
    ledger().on_free(p);
    std::free(p);
  }
  void memzero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void to_host(void* host_dst, const void* src, size_t bytes) override {
    std::memcpy(host_dst, src, bytes);
  }
  void from_host(void* dst, const void* host_src, size_t bytes) override {
    std::memcpy(dst, host_src, bytes);
  }
  void synchronize() override {}

  void to_f32(float* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n * sizeof(float));
  }
  void from_f32(void* dst, const float* src, size_t n) override {
    std::memcpy(dst, src, n * sizeof(float));
  }

  void encoder_forward(void* out, const int* tokens, const void* wte, const void* wpe, int B, int T,
                       int C) override {
    cpu::encoder_forward(f32(out), tokens, f32(wte), f32(wpe), B, T, C);
  }
  void encoder_backward(void* dwte, void* dwpe, const void* dout, const int* tokens, int B, int T,
                        int C) override {
    cpu::encoder_backward(f32(dwte), f32(dwpe), f32(dout), tokens, B, T, C);
  }
  void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w,
                         const void* b, int N, int C) override {
    cpu::layernorm_forward(f32(out), mean, rstd, f32(inp), f32(w), f32(b), N, C);
  }
  void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd,
                                  const void* a, const void* b, const void* w, const void* bias,
                                  int N, int C) override {
    cpu::residual_layernorm_forward(f32(residual), f32(out), mean, rstd, f32(a), f32(b), f32(w),
                                    f32(bias), N, C);
  }
  void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp,
                          const void* w, const float* mean, const float* rstd, int N,
                          int C) override {
    cpu::layernorm_backward(f32(dinp), f32(dw), f32(db), f32(dout), f32(inp), f32(w), mean, rstd, N,
                            C);
  }
  void matmul_forward(void* out, void* pre_gelu, const void* inp, const void* w, const void* bias,
                      int N, int C, int OC) override {
    cpu::matmul_forward(f32(out), f32(pre_gelu), f32(inp), f32(w), f32(bias), N, C, OC);
  }
  void matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp,
                       const void* w, const void* inp_pre_gelu, int N, int C, int OC) override {
    cpu::matmul_backward(f32(dinp), f32(dw), f32(dbias), f32(dout), f32(inp), f32(w),
                         f32(inp_pre_gelu), N, C, OC);
  }
  void attention_forward(void* out, float* lse, const void* qkv, int B, int T, int C,
                         int NH) override {
    check_heads(C, NH);
    cpu::attention_forward(f32(out), lse, f32(qkv), B, T, C, NH);
  }
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out,
                          const float* lse, int B, int T, int C, int NH) override {
    check_heads(C, NH);
    cpu::attention_backward(f32(dqkv), f32(dout), f32(qkv), f32(out), lse, B, T, C, NH);
  }
  void cross_entropy_forward_backward(float* losses, void* logits, const int* targets, int N, int V,
                                      float dloss) override {
    cpu::cross_entropy_forward_backward(losses, f32(logits), targets, N, V, dloss);
  }
  void cross_entropy_forward(float* losses, const void* logits, const int* targets, int N,
                             int V) override {
    cpu::cross_entropy_forward(losses, f32(logits), targets, N, V);
  }

  void embedding_rows_forward(void* out, const int* tokens, const void* table, int row_begin,
                              int rows, int N, int C) override {
    cpu::embedding_rows_forward(f32(out), tokens, f32(table), row_begin, rows, N, C);
  }
  void embedding_rows_backward(void* dtable, const void* dout, const int* tokens, int row_begin,
                               int rows, int N, int C) override {
    cpu::embedding_rows_backward(f32(dtable), f32(dout), tokens, row_begin, rows, N, C);
  }
  void logits_logsumexp(float* lse, const void* logits, int N, int V) override {
    cpu::logits_logsumexp(lse, f32(logits), N, V);
  }
  void logits_pick(float* picked, const void* logits, const int* targets, int col_begin, int N,
                   int V) override {
    cpu::logits_pick(picked, f32(logits), targets, col_begin, N, V);
  }
  void logsumexp_merge(float* lse, const float* parts, int n_parts, int N) override {
    cpu::logsumexp_merge(lse, parts, n_parts, N);
  }
  void losses_from_lse(float* losses, const float* lse, const float* picked, int N) override {
    cpu::losses_from_lse(losses, lse, picked, N);
  }
  void cross_entropy_backward_from_lse(void* logits, const float* lse, const int* targets,
                                       int col_begin, int N, int V, float dloss) override {
    cpu::cross_entropy_backward_from_lse(f32(logits), lse, targets, col_begin, N, V, dloss);
  }

  void adamw(void* param, float* master, const void* grad, float* m, float* v, size_t n,
             const AdamWArgs& a) override {
    cpu::adamw(f32(param), master, f32(grad), m, v, n, a);
  }
  double sum_squares(const void* x, size_t n) override { return cpu::sum_squares(f32(x), n); }

  // ---- DeviceServices ----
  DeviceServices& services() override { return *this; }
  // Host memory is the backend's own memory; pinning means nothing here.
  void* alloc_host(size_t bytes, MemCategory cat, bool) override {
    void* p = aligned_zeroed(bytes, cat);
    host_ledger().on_alloc(p, bytes, cat);
    return p;
  }
  void release_host(void* p) override {
    if (!p) return;
    host_ledger().on_free(p);
    std::free(p);
  }
  uint64_t to_host_async(void* host_dst, const void* src, size_t bytes) override {
    return defer(host_dst, src, bytes);
  }
  uint64_t from_host_async(void* dst, const void* host_src, size_t bytes) override {
    return defer(dst, host_src, bytes);
  }
  void wait_copy(uint64_t ticket) override {
    while (!deferred_.empty() && deferred_.front().ticket <= ticket) {
      const DeferredCopy& c = deferred_.front();
      std::memcpy(c.dst, c.src, c.bytes);
      deferred_.pop_front();
    }
  }
  void convert(void* dst, DType dst_t, const void* src, DType src_t, size_t n) override {
    for (size_t i = 0; i < n; ++i) store(dst, dst_t, i, load(src, src_t, i));
  }
  void add_inplace(void* dst, const void* src, size_t n) override {
    float* d = f32(dst);
    const float* s = f32(src);
    for (size_t i = 0; i < n; ++i) d[i] += s[i];
  }

  // Blocks are quantized relative to where they start: with 4 bits a block
  // starts on a byte when block is even (checked), so block b's codes begin at
  // byte b * block / 2.
  void quantize_blocks(void* q, float* scales, const void* x, DType xt, size_t n, size_t block,
                       int bits) override {
    check_quant(n, block, bits);
    std::vector<float> values(block);
    uint8_t* out = static_cast<uint8_t*>(q);
    for (size_t b = 0, at = 0; at < n; b++, at += block) {
      const size_t len = std::min(block, n - at);
      for (size_t i = 0; i < len; i++) values[i] = load(x, xt, at + i);
      cpu::quantize_block(out + (bits == 8 ? at : at / 2), &scales[b], values.data(), len, bits);
    }
  }
  void dequantize_blocks(void* out, DType ot, const void* q, const float* scales, size_t n,
                         size_t block, int bits, bool accumulate) override {
    check_quant(n, block, bits);
    const uint8_t* in = static_cast<const uint8_t*>(q);
    for (size_t i = 0; i < n; i++) {
      const float v = cpu::dequantize_element(in, scales[i / block], i, bits);
      store(out, ot, i, accumulate ? load(out, ot, i) + v : v);
    }
  }

 private:
  static void check_quant(size_t n, size_t block, int bits) {
    if ((bits != 8 && bits != 4) || block == 0 || (bits == 4 && (n % 2 != 0 || block % 2 != 0)))
      throw std::logic_error("quantize: " + std::to_string(bits) + " bits over " +
                             std::to_string(n) + " elements in blocks of " + std::to_string(block) +
                             " (4 bits needs both even)");
  }
  static void check_heads(int C, int NH) {
    if (NH <= 0 || C % NH != 0) {
      throw std::runtime_error("cpu attention: C = " + std::to_string(C) +
                               " with NH = " + std::to_string(NH) + ", expected C divisible by NH");
    }
  }
  uint64_t defer(void* dst, const void* src, size_t bytes) {
    deferred_.push_back({dst, src, bytes, ++tickets_});
    return tickets_;
  }

  struct DeferredCopy {
    void* dst;
    const void* src;
    size_t bytes;
    uint64_t ticket;
  };
  std::deque<DeferredCopy> deferred_;  // issued, not yet waited for
  uint64_t tickets_ = 0;
};

}  // namespace

std::unique_ptr<Ops> make_cpu_ops() { return std::make_unique<CpuOps>(); }

}  // namespace zt
