// Linear layers through cuBLASLt (bf16 in/out, fp32 accumulation), with bias and
// GELU fused into the epilogues where cuBLASLt supports the shape, and small
// kernels for what it does not fuse (matmul_kernels.cu).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "model/cuda/cuda_context.cuh"

namespace zt {

class Matmul {
 public:
  Matmul(CudaContext& ctx, MemoryLedger& ledger);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  // Ops::matmul_forward / matmul_backward, same contract (see model/ops.h).
  void forward(bf16* out, bf16* pre_gelu, const bf16* inp, const bf16* w, const bf16* bias, int N,
               int C, int OC);
  void backward(bf16* dinp, bf16* dw, bf16* dbias, const bf16* dout, const bf16* inp, const bf16* w,
                const bf16* inp_pre_gelu, int N, int C, int OC);

 private:
  struct Gemm;
  // D = op(A) op(B) + beta * D with the given epilogue. Returns false when
  // cuBLASLt offers no algorithm for it (the caller then runs it unfused).
  bool gemm(const Gemm& g);

  CudaContext& ctx_;
  MemoryLedger& ledger_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  // Chosen algorithm per problem (shapes, transposes, epilogue, pointer
  // alignments); empty when cuBLASLt had none. One fixed choice per problem
  // keeps results bit-identical from run to run.
  std::map<std::vector<int64_t>, std::optional<cublasLtMatmulAlgo_t>> algos_;
};

// matmul_kernels.cu
// x = d (+ bias[col]) over rows of OC; with pre_gelu: pre_gelu = x, out = gelu(x)
// (tanh form); without: out = x (d may alias out, or pre_gelu).
void launch_bias_gelu(CudaContext& ctx, bf16* out, bf16* pre_gelu, const bf16* d, const bf16* bias,
                      int N, int OC);
// d[i] *= gelu'(pre[i]) for i < n.
void launch_gelu_backward_inplace(CudaContext& ctx, bf16* d, const bf16* pre, size_t n);
// dbias[OC] += column sums of dout[N, OC], deterministic.
void launch_bias_grad(CudaContext& ctx, bf16* dbias, const bf16* dout, int N, int OC);

}  // namespace zt
