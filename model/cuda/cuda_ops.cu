// CudaOps: the bf16 CUDA backend of the Ops and DeviceServices interfaces. It owns the device
// selection, the one compute stream every op is enqueued on, device memory
// (cudaMalloc, zeroed, counted in the ledger), the scratch buffer and the
// cuBLASLt state; the kernels live in the other files of this folder.
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "model/cuda/cuda_kernels.cuh"
#include "model/cuda/cuda_stream.h"
#include "model/cuda/matmul.cuh"
#include "model/cuda/op_profiler.cuh"
#include "model/device_services.h"

namespace zt {
namespace {

bf16* bf(void* p) { return static_cast<bf16*>(p); }
const bf16* bf(const void* p) { return static_cast<const bf16*>(p); }

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("cuda ops: " + what);
}

std::string dims(const char* op, std::initializer_list<std::pair<const char*, long long>> vals) {
  std::string s = std::string(op) + ":";
  for (const auto& v : vals) s += std::string(" ") + v.first + "=" + std::to_string(v.second);
  return s;
}

// Why no CUDA device can run this build's kernels, or empty when one can.
std::string device_problem(int device_index) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return std::string("no usable CUDA driver or device (") + cudaGetErrorString(err) + ")";
  }
  if (count == 0) return "no CUDA device found";
  cudaDeviceProp prop;
  const int dev = device_index % count;
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    cudaGetLastError();
    return "cannot read the properties of CUDA device " + std::to_string(dev);
  }
  if (prop.major < 9)
    return "CUDA device " + std::to_string(dev) + " (" + prop.name + ") is sm_" +
           std::to_string(prop.major * 10 + prop.minor) +
           "; zerotrain's kernels are built for sm_90 (Hopper)";
  return "";
}

class CudaOps final : public Ops, public DeviceServices {
 public:
  explicit CudaOps(int local_rank) {
    const std::string problem = device_problem(local_rank < 0 ? 0 : local_rank);
    if (!problem.empty()) throw std::runtime_error("system.device: cuda requested, but " + problem);
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    ctx_.device = (local_rank < 0 ? 0 : local_rank) % count;
    CUDA_CHECK(cudaSetDevice(ctx_.device));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, ctx_.device));
    ctx_.num_sms = prop.multiProcessorCount;
    ctx_.max_smem_per_block = prop.sharedMemPerBlockOptin;
    // A blocking stream: it still orders against legacy default-stream copies
    // that other code might issue on the same buffers.
    CUDA_CHECK(cudaStreamCreate(&ctx_.stream));
    // The copy stream is ordered against the compute stream by events only.
    CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&issue_, cudaEventDisableTiming));
    try {
      scratch_ = std::make_unique<DeviceScratch>(&ledger());
      ctx_.scratch = scratch_.get();
      matmul_ = std::make_unique<Matmul>(ctx_, ledger());
    } catch (...) {
      scratch_.reset();
      cudaEventDestroy(issue_);
      cudaStreamDestroy(copy_stream_);
      cudaStreamDestroy(ctx_.stream);
      throw;
    }
  }

  ~CudaOps() override {
    drop_cache();
    cudaStreamSynchronize(ctx_.stream);
    cudaStreamSynchronize(copy_stream_);
    for (const InFlightCopy& c : copies_) cudaEventDestroy(c.done);
    for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
    cudaEventDestroy(issue_);
    cudaStreamDestroy(copy_stream_);
    matmul_.reset();
    scratch_.reset();
    cudaStreamDestroy(ctx_.stream);
  }

  std::string name() const override { return "cuda"; }
  DType dtype() const override { return DType::BF16; }
  bool on_device() const override { return true; }
  cudaStream_t stream() const { return ctx_.stream; }

  // Released blocks are cached by size and handed out again, because cudaFree
  // waits for the whole device: ZeRO's per-unit gather and staging buffers would
  // otherwise stall the GPU at every release. Reuse is safe because every user
  // of a block is ordered on the compute stream before its release (a
  // collective's handle is waited for, which orders the compute stream after it).
  void* alloc(size_t bytes, MemCategory cat) override {
    if (bytes == 0) return nullptr;
    const size_t size = (bytes + 511) / 512 * 512;
    void* p = nullptr;
    auto hit = cache_.find(size);
    if (hit != cache_.end()) {
      p = hit->second;
      cache_.erase(hit);
    } else {
      cudaError_t err = cudaMalloc(&p, size);
      if (err == cudaErrorMemoryAllocation && !cache_.empty()) {
        cudaGetLastError();
        drop_cache();
        err = cudaMalloc(&p, size);
      }
      if (err != cudaSuccess) {
        cudaGetLastError();
        throw std::runtime_error("cuda ops: allocating " + std::to_string(bytes) + " bytes of " +
                                 mem_category_name(cat) + " failed: " + cudaGetErrorString(err));
      }
    }
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, ctx_.stream));
    sizes_[p] = size;
    ledger().on_alloc(p, bytes, cat);
    return p;
  }
  void release(void* p) override {
    if (!p) return;
    ledger().on_free(p);
    auto it = sizes_.find(p);
    cache_.insert({it->second, p});
    sizes_.erase(it);
  }
  void memzero(void* p, size_t bytes) override {
    if (bytes) CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, ctx_.stream));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "copy (ZeRO)");
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx_.stream));
  }
  void to_host(void* host_dst, const void* src, size_t bytes) override {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream));
    CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  }
  void from_host(void* dst, const void* host_src, size_t bytes) override {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, ctx_.stream));
    CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));  // host_src may go away on return
  }
  void synchronize() override { CUDA_CHECK(cudaStreamSynchronize(ctx_.stream)); }

  void to_f32(float* dst, const void* src, size_t n) override {
    launch_to_f32(ctx_, dst, bf(src), n);
  }
  void from_f32(void* dst, const float* src, size_t n) override {
    launch_from_f32(ctx_, bf(dst), src, n);
  }

  void encoder_forward(void* out, const int* tokens, const void* wte, const void* wpe, int B, int T,
                       int C) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "encoder_forward");
    require(B >= 0 && T >= 0 && C >= 0, dims("encoder_forward", {{"B", B}, {"T", T}, {"C", C}}));
    launch_encoder_forward(ctx_, bf(out), tokens, bf(wte), bf(wpe), B, T, C);
  }
  void encoder_backward(void* dwte, void* dwpe, const void* dout, const int* tokens, int B, int T,
                        int C) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "encoder_backward");
    require(B >= 0 && T >= 0 && C >= 0, dims("encoder_backward", {{"B", B}, {"T", T}, {"C", C}}));
    launch_encoder_backward(ctx_, bf(dwte), bf(dwpe), bf(dout), tokens, B, T, C);
  }
  void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w,
                         const void* b, int N, int C) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "layernorm_forward");
    require(N >= 0 && C > 0, dims("layernorm_forward", {{"N", N}, {"C", C}}));
    launch_layernorm_forward(ctx_, bf(out), mean, rstd, bf(inp), bf(w), bf(b), N, C);
  }
  void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd,
                                  const void* a, const void* b, const void* w, const void* bias,
                                  int N, int C) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "residual_layernorm_forward");
    require(N >= 0 && C > 0, dims("residual_layernorm_forward", {{"N", N}, {"C", C}}));
    launch_residual_layernorm_forward(ctx_, bf(residual), bf(out), mean, rstd, bf(a), bf(b), bf(w),
                                      bf(bias), N, C);
  }
  void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp,
                          const void* w, const float* mean, const float* rstd, int N,
                          int C) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "layernorm_backward");
    require(N >= 0 && C > 0, dims("layernorm_backward", {{"N", N}, {"C", C}}));
    launch_layernorm_backward(ctx_, bf(dinp), bf(dw), bf(db), bf(dout), bf(inp), bf(w), mean, rstd,
                              N, C);
  }
  void matmul_forward(void* out, void* pre_gelu, const void* inp, const void* w, const void* bias,
                      int N, int C, int OC) override {
    OpProfiler::Scope timed(
        &profiler_, ctx_.stream,
        profiler_.enabled() ? shape_name("matmul_forward", C, OC, pre_gelu != nullptr) : "");
    require(N >= 0 && C > 0 && OC >= 0, dims("matmul_forward", {{"N", N}, {"C", C}, {"OC", OC}}));
    matmul_->forward(bf(out), bf(pre_gelu), bf(inp), bf(w), bf(bias), N, C, OC);
  }
  void matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp,
                       const void* w, const void* inp_pre_gelu, int N, int C, int OC) override {
    OpProfiler::Scope timed(
        &profiler_, ctx_.stream,
        profiler_.enabled() ? shape_name("matmul_backward", C, OC, inp_pre_gelu != nullptr) : "");
    require(N >= 0 && C > 0 && OC >= 0, dims("matmul_backward", {{"N", N}, {"C", C}, {"OC", OC}}));
    matmul_->backward(bf(dinp), bf(dw), bf(dbias), bf(dout), bf(inp), bf(w), bf(inp_pre_gelu), N, C,
                      OC);
  }
  void attention_forward(void* out, float* lse, const void* qkv, int B, int T, int C,
                         int NH) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "attention_forward");
    check_attention("attention_forward", B, T, C, NH);
    launch_attention_forward(ctx_, bf(out), lse, bf(qkv), B, T, C, NH);
  }
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out,
                          const float* lse, int B, int T, int C, int NH) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "attention_backward");
    check_attention("attention_backward", B, T, C, NH);
    launch_attention_backward(ctx_, bf(dqkv), bf(dout), bf(qkv), bf(out), lse, B, T, C, NH);
  }
  void cross_entropy_forward_backward(float* losses, void* logits, const int* targets, int N, int V,
                                      float dloss) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "cross_entropy_forward_backward");
    require(N >= 0 && V > 0, dims("cross_entropy_forward_backward", {{"N", N}, {"V", V}}));
    launch_cross_entropy_forward_backward(ctx_, losses, bf(logits), targets, N, V, dloss);
  }
  void cross_entropy_forward(float* losses, const void* logits, const int* targets, int N,
                             int V) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "cross_entropy_forward");
    require(N >= 0 && V > 0, dims("cross_entropy_forward", {{"N", N}, {"V", V}}));
    launch_cross_entropy_forward(ctx_, losses, bf(logits), targets, N, V);
  }
  void embedding_rows_forward(void* out, const int* tokens, const void* table, int row_begin,
                              int rows, int N, int C) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "embedding_rows_forward");
    require_non_negative("embedding_rows_forward",
                         {{"row_begin", row_begin}, {"rows", rows}, {"N", N}, {"C", C}});
    launch_embedding_rows_forward(ctx_, bf(out), tokens, bf(table), row_begin, rows, N, C);
  }
  void embedding_rows_backward(void* dtable, const void* dout, const int* tokens, int row_begin,
                               int rows, int N, int C) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "embedding_rows_backward");
    require_non_negative("embedding_rows_backward",
                         {{"row_begin", row_begin}, {"rows", rows}, {"N", N}, {"C", C}});
    launch_embedding_rows_backward(ctx_, bf(dtable), bf(dout), tokens, row_begin, rows, N, C);
  }
  void logits_logsumexp(float* lse, const void* logits, int N, int V) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "logits_logsumexp");
    require_non_negative("logits_logsumexp", {{"N", N}, {"V", V}});
    launch_logits_logsumexp(ctx_, lse, bf(logits), N, V);
  }
  void logits_pick(float* picked, const void* logits, const int* targets, int col_begin, int N,
                   int V) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "logits_pick");
    require_non_negative("logits_pick", {{"col_begin", col_begin}, {"N", N}, {"V", V}});
    launch_logits_pick(ctx_, picked, bf(logits), targets, col_begin, N, V);
  }
  void logsumexp_merge(float* lse, const float* parts, int n_parts, int N) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "logsumexp_merge");
    require(n_parts >= 1 && N >= 0,
            dims("logsumexp_merge", {{"n_parts", n_parts}, {"N", N}}) + " (expected n_parts >= 1)");
    launch_logsumexp_merge(ctx_, lse, parts, n_parts, N);
  }
  void losses_from_lse(float* losses, const float* lse, const float* picked, int N) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "losses_from_lse");
    require_non_negative("losses_from_lse", {{"N", N}});
    launch_losses_from_lse(ctx_, losses, lse, picked, N);
  }
  void cross_entropy_backward_from_lse(void* logits, const float* lse, const int* targets,
                                       int col_begin, int N, int V, float dloss) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "cross_entropy_backward_from_lse");
    require_non_negative("cross_entropy_backward_from_lse",
                         {{"col_begin", col_begin}, {"N", N}, {"V", V}});
    launch_cross_entropy_backward_from_lse(ctx_, bf(logits), lse, targets, col_begin, N, V, dloss);
  }
  void adamw(void* param, float* master, const void* grad, float* m, float* v, size_t n,
             const AdamWArgs& a) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "adamw");
    launch_adamw(ctx_, bf(param), master, bf(grad), m, v, n, a);
  }
  double sum_squares(const void* x, size_t n) override { return sum_squares_bf16(ctx_, bf(x), n); }

  // ---- DeviceServices ----
  DeviceServices& services() override { return *this; }
  // Pinned: cudaHostAlloc (the copies then run at full PCIe/NVLink-C2C rate
  // and can be asynchronous); otherwise ordinary pageable memory.
  void* alloc_host(size_t bytes, MemCategory cat, bool pinned) override {
    const size_t size = bytes == 0 ? 64 : bytes;
    void* p = nullptr;
    if (pinned) {
      const cudaError_t err = cudaHostAlloc(&p, size, cudaHostAllocDefault);
      if (err != cudaSuccess) {
        cudaGetLastError();
        throw std::runtime_error("cuda ops: pinning " + std::to_string(bytes) + " host bytes of " +
                                 mem_category_name(cat) + " failed: " + cudaGetErrorString(err));
      }
      pinned_.insert(p);
    } else {
      p = std::aligned_alloc(64, (size + 63) / 64 * 64);
      if (!p)
        throw std::runtime_error("cuda ops: out of host memory allocating " +
                                 std::to_string(bytes) + " bytes of " + mem_category_name(cat));
    }
    std::memset(p, 0, size);
    host_ledger().on_alloc(p, bytes, cat);
    return p;
  }
  void release_host(void* p) override {
    if (!p) return;
    host_ledger().on_free(p);
    if (pinned_.erase(p)) cudaFreeHost(p);
    else std::free(p);
  }
  uint64_t to_host_async(void* host_dst, const void* src, size_t bytes) override {
    return enqueue_copy(host_dst, src, bytes, cudaMemcpyDeviceToHost);
  }
  uint64_t from_host_async(void* dst, const void* host_src, size_t bytes) override {
    return enqueue_copy(dst, host_src, bytes, cudaMemcpyHostToDevice);
  }
  // The copy stream runs its copies in order, so waiting for the last one up to
  // `ticket` waits for all of them.
  void wait_copy(uint64_t ticket) override {
    size_t done = 0;
    while (done < copies_.size() && copies_[done].ticket <= ticket) done++;
    if (done == 0) return;
    CUDA_CHECK(cudaEventSynchronize(copies_[done - 1].done));
    for (size_t i = 0; i < done; i++) free_events_.push_back(copies_[i].done);
    copies_.erase(copies_.begin(), copies_.begin() + static_cast<std::ptrdiff_t>(done));
  }
  void convert(void* dst, DType dst_t, const void* src, DType src_t, size_t n) override {
    require(dst_t != DType::F64 && src_t != DType::F64, "convert: fp64 buffers are not converted");
    launch_convert(ctx_, dst, dst_t, src, src_t, n);
  }
  void add_inplace(void* dst, const void* src, size_t n) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "add_inplace (ZeRO)");
    launch_add_inplace(ctx_, bf(dst), bf(src), n);
  }
  void quantize_blocks(void* q, float* scales, const void* x, DType xt, size_t n, size_t block,
                       int bits) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "quantize_blocks (ZeRO)");
    check_quant(xt, n, block, bits);
    launch_quantize_blocks(ctx_, q, scales, x, xt, n, block, bits);
  }
  void dequantize_blocks(void* out, DType ot, const void* q, const float* scales, size_t n,
                         size_t block, int bits, bool accumulate) override {
    OpProfiler::Scope timed(&profiler_, ctx_.stream, "dequantize_blocks (ZeRO)");
    check_quant(ot, n, block, bits);
    launch_dequantize_blocks(ctx_, out, ot, q, scales, n, block, bits, accumulate);
  }

 private:
  static std::string shape_name(const char* op, int C, int OC, bool gelu) {
    return std::string(op) + " " + std::to_string(C) + "->" + std::to_string(OC) +
           (gelu ? " +gelu" : "");
  }
  // After everything issued on the compute stream so far, on the copy stream.
  uint64_t enqueue_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    CUDA_CHECK(cudaEventRecord(issue_, ctx_.stream));
    CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, issue_, 0));
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, copy_stream_));
    cudaEvent_t done = nullptr;
    if (free_events_.empty()) {
      CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    } else {
      done = free_events_.back();
      free_events_.pop_back();
    }
    CUDA_CHECK(cudaEventRecord(done, copy_stream_));
    copies_.push_back({++copy_tickets_, done});
    return copy_tickets_;
  }
  void drop_cache() {
    cudaDeviceSynchronize();
    for (auto& kv : cache_) cudaFree(kv.second);
    cache_.clear();
  }
  std::multimap<size_t, void*> cache_;
  OpProfiler profiler_;
  std::unordered_map<void*, size_t> sizes_;
  std::unordered_set<void*> pinned_;  // alloc_host's page-locked blocks
  struct InFlightCopy {
    uint64_t ticket;
    cudaEvent_t done;
  };
  cudaStream_t copy_stream_ = nullptr;  // to_host_async / from_host_async
  cudaEvent_t issue_ = nullptr;         // re-recorded on the compute stream per copy
  std::deque<InFlightCopy> copies_;     // issued, not yet waited for
  std::vector<cudaEvent_t> free_events_;
  uint64_t copy_tickets_ = 0;

  // The same refusals as the CPU backend (a caller's bug, hence logic_error).
  static void check_quant(DType t, size_t n, size_t block, int bits) {
    if (t == DType::F64) throw std::logic_error("quantize: fp64 buffers are not quantized");
    if ((bits != 8 && bits != 4) || block == 0 || (bits == 4 && (n % 2 != 0 || block % 2 != 0)))
      throw std::logic_error("quantize: " + std::to_string(bits) + " bits over " +
                             std::to_string(n) + " elements in blocks of " + std::to_string(block) +
                             " (4 bits needs both even)");
  }
  // Shard bounds and shapes of the vocabulary-parallel ops.
  static void require_non_negative(const char* op,
                                   std::initializer_list<std::pair<const char*, long long>> vals) {
    bool ok = true;
    for (const auto& v : vals) ok = ok && v.second >= 0;
    require(ok, dims(op, vals) + " (expected all >= 0)");
  }
  static void check_attention(const char* op, int B, int T, int C, int NH) {
    require(B >= 0 && T >= 0 && C > 0 && NH > 0 && C % NH == 0,
            dims(op, {{"B", B}, {"T", T}, {"C", C}, {"NH", NH}}) + " (C must be a multiple of NH)");
  }

  CudaContext ctx_;
  std::unique_ptr<DeviceScratch> scratch_;
  std::unique_ptr<Matmul> matmul_;
};

}  // namespace

bool cuda_available(std::string* why_not) {
  const std::string problem = device_problem(0);
  if (problem.empty()) return true;
  if (why_not) *why_not = problem;
  return false;
}

std::unique_ptr<Ops> make_cuda_ops(int local_rank) { return std::make_unique<CudaOps>(local_rank); }

void* cuda_compute_stream(Ops& ops) {
  auto* cuda = dynamic_cast<CudaOps*>(&ops);
  if (!cuda)
    throw std::runtime_error("cuda_compute_stream: backend '" + ops.name() + "' is not cuda");
  return static_cast<void*>(cuda->stream());
}

}  // namespace zt
