// Fused softmax + cross-entropy (+ gradient in place) over logits[N, V], and its
// vocabulary-parallel pieces (tensor parallelism: each rank holds V columns of
// the logits starting at col_begin).
//
// Fused: one block per row. Pass 1: each thread walks its VEC-wide chunks of the
// row keeping an online (max, sum of exp) pair; pairs are merged across the warp
// with shuffles and across warps through shared memory, giving the row's
// log-sum-exp in fp32. loss = lse - logit[target]. Pass 2 (gradient variant)
// rewrites the row as dloss * (softmax - onehot(target)) in bf16. The target
// logit is read before the block-wide merge, so before pass 2 overwrites it.
// An out-of-range target yields a NaN loss (visible, never an out-of-bounds read).
//
// Sharded: the shard's lse per row (pass 1 alone), the target's logit where the
// shard holds it, the merge of the shards' lse, the loss, and the gradient from
// the merged lse (pass 2 alone, elementwise since lse needs no block reduction).
#include <cmath>
#include <stdexcept>

#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

constexpr int kThreads = 512;

struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

// The log-sum-exp of one row x[0, V) of bf16 logits, in fp32, returned to every
// thread of the block (one block per row, kThreads threads). Each thread walks
// its VEC-wide chunks keeping an online (max, sum of exp) pair; the pairs are
// merged across the warp with shuffles and across warps through shared memory.
// V = 0 (an empty vocabulary shard) gives -inf.
template <int VEC>
__device__ float block_row_logsumexp(const bf16* x, int V) {
  __shared__ MaxSum warp_parts[kThreads / 32];
  __shared__ float row_lse;
  MaxSum acc{-INFINITY, 0.f};
  for (int c = threadIdx.x * VEC; c < V; c += kThreads * VEC) {
    float v[VEC];
    load_bf16<VEC>(v, x + c);
    float cmax = v[0];
#pragma unroll
    for (int i = 1; i < VEC; ++i) cmax = fmaxf(cmax, v[i]);
    const float m = fmaxf(acc.m, cmax);
    float s = acc.s * __expf(acc.m - m);
#pragma unroll
    for (int i = 0; i < VEC; ++i) s += __expf(v[i] - m);
    acc = {m, s};
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, acc.m, o), __shfl_xor_sync(0xffffffffu, acc.s, o)};
    acc = merge(acc, other);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_parts[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    MaxSum total = warp_parts[0];
    for (int w = 1; w < kThreads / 32; ++w) total = merge(total, warp_parts[w]);
    row_lse = total.m + logf(total.s);
  }
  __syncthreads();
  return row_lse;
}

// losses[row] = lse - logit[target]; with GRAD the row is then rewritten in
// place as dloss * (softmax - onehot(target)). One block per row.
template <int VEC, bool GRAD>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_kernel(float* losses, const bf16* logits, bf16* grad, const int* targets, int V,
                         float dloss) {
  const size_t off = static_cast<size_t>(blockIdx.x) * V;
  const bf16* x = logits + off;
  const int target = targets[blockIdx.x];
  const bool valid = target >= 0 && target < V;
  const float x_target = (threadIdx.x == 0 && valid) ? __bfloat162float(x[target]) : 0.f;
  const float lse = block_row_logsumexp<VEC>(x, V);
  if (threadIdx.x == 0) losses[blockIdx.x] = valid ? lse - x_target : NAN;
  if constexpr (GRAD) {
    bf16* gx = grad + off;
    for (int c = threadIdx.x * VEC; c < V; c += kThreads * VEC) {
      float v[VEC];
      load_bf16<VEC>(v, x + c);
#pragma unroll
      for (int i = 0; i < VEC; ++i)
        v[i] = dloss * (__expf(v[i] - lse) - (c + i == target ? 1.f : 0.f));
      store_bf16<VEC>(gx + c, v);
    }
  }
}

// lse[row] = the log-sum-exp of one shard's V columns of the row. One block per row.
template <int VEC>
__global__ void __launch_bounds__(kThreads)
    logits_logsumexp_kernel(float* lse, const bf16* logits, int V) {
  const float row_lse = block_row_logsumexp<VEC>(logits + static_cast<size_t>(blockIdx.x) * V, V);
  if (threadIdx.x == 0) lse[blockIdx.x] = row_lse;
}

// One thread per row: the target's logit when the shard [col_begin, col_begin +
// V) holds it, else 0 (so the picks summed over the shards give the logit).
__global__ void logits_pick_kernel(float* picked, const bf16* logits, const int* targets,
                                   int col_begin, int N, int V) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const long long local = static_cast<long long>(targets[row]) - col_begin;
  picked[row] =
      local >= 0 && local < V
          ? __bfloat162float(logits[static_cast<size_t>(row) * V + static_cast<size_t>(local)])
          : 0.f;
}

// One thread per row n merges parts[p * N + n] over p: max first, then the sum
// of exp(part - max) in p order (accurate expf/logf: few terms, fp32 result).
// All parts -inf (every shard empty) gives -inf. The thread reads all of its
// row's parts before writing lse[n], and no other thread reads parts[n]: lse
// may be parts itself.
__global__ void logsumexp_merge_kernel(float* lse, const float* parts, int n_parts, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float m = -INFINITY;
  for (int p = 0; p < n_parts; ++p) m = fmaxf(m, parts[static_cast<size_t>(p) * N + n]);
  if (m == -INFINITY) {
    lse[n] = m;
    return;
  }
  float s = 0.f;
  for (int p = 0; p < n_parts; ++p) s += expf(parts[static_cast<size_t>(p) * N + n] - m);
  lse[n] = m + logf(s);
}

// One thread per row.
__global__ void losses_from_lse_kernel(float* losses, const float* lse, const float* picked,
                                       int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n < N) losses[n] = lse[n] - picked[n];
}

// In place over the shard's logits[N, V] (row-major): dloss * (exp(x - lse[row])
// - onehot), the onehot at column targets[row] - col_begin when the shard holds
// it. The whole-vocabulary lse is given, so each element stands alone: one
// thread per VEC consecutive columns of one row, neighbouring threads on
// neighbouring columns (contiguous bytes per warp).
template <int VEC>
__global__ void cross_entropy_backward_from_lse_kernel(bf16* logits, const float* lse,
                                                       const int* targets, int col_begin, int N,
                                                       int V, float dloss) {
  const int groups = V / VEC;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(N) * groups) return;
  const int row = static_cast<int>(idx / groups);
  const int c = static_cast<int>(idx % groups) * VEC;
  const long long target = static_cast<long long>(targets[row]) - col_begin;
  const float row_lse = lse[row];
  bf16* x = logits + static_cast<size_t>(row) * V + c;
  float v[VEC];
  load_bf16<VEC>(v, x);
#pragma unroll
  for (int i = 0; i < VEC; ++i)
    v[i] = dloss * (__expf(v[i] - row_lse) - (c + i == target ? 1.f : 0.f));
  store_bf16<VEC>(x, v);
}

constexpr int kRowThreads = 256;  // the one-thread-per-row and elementwise kernels

unsigned grid_for(size_t threads) {
  return static_cast<unsigned>(ceil_div(threads, static_cast<size_t>(kRowThreads)));
}

template <bool GRAD>
void launch(CudaContext& ctx, float* losses, const bf16* logits, bf16* grad, const int* targets,
            int N, int V, float dloss) {
  if (N == 0) return;
  if (V <= 0)
    throw std::runtime_error("cross_entropy: V = " + std::to_string(V) + ", expected > 0");
  if (V % 8 == 0 && aligned_to(logits, 16)) {
    cross_entropy_kernel<8, GRAD>
        <<<N, kThreads, 0, ctx.stream>>>(losses, logits, grad, targets, V, dloss);
  } else {
    cross_entropy_kernel<1, GRAD>
        <<<N, kThreads, 0, ctx.stream>>>(losses, logits, grad, targets, V, dloss);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_cross_entropy_forward_backward(CudaContext& ctx, float* losses, bf16* logits,
                                           const int* targets, int N, int V, float dloss) {
  launch<true>(ctx, losses, logits, logits, targets, N, V, dloss);
}

void launch_cross_entropy_forward(CudaContext& ctx, float* losses, const bf16* logits,
                                  const int* targets, int N, int V) {
  launch<false>(ctx, losses, logits, nullptr, targets, N, V, 0.f);
}

void launch_logits_logsumexp(CudaContext& ctx, float* lse, const bf16* logits, int N, int V) {
  if (N == 0) return;
  if (V % 8 == 0 && aligned_to(logits, 16)) {
    logits_logsumexp_kernel<8><<<N, kThreads, 0, ctx.stream>>>(lse, logits, V);
  } else {
    logits_logsumexp_kernel<1><<<N, kThreads, 0, ctx.stream>>>(lse, logits, V);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_logits_pick(CudaContext& ctx, float* picked, const bf16* logits, const int* targets,
                        int col_begin, int N, int V) {
  if (N == 0) return;
  logits_pick_kernel<<<grid_for(N), kRowThreads, 0, ctx.stream>>>(picked, logits, targets,
                                                                  col_begin, N, V);
  CUDA_CHECK_LAUNCH();
}

void launch_logsumexp_merge(CudaContext& ctx, float* lse, const float* parts, int n_parts, int N) {
  if (N == 0) return;
  logsumexp_merge_kernel<<<grid_for(N), kRowThreads, 0, ctx.stream>>>(lse, parts, n_parts, N);
  CUDA_CHECK_LAUNCH();
}

void launch_losses_from_lse(CudaContext& ctx, float* losses, const float* lse, const float* picked,
                            int N) {
  if (N == 0) return;
  losses_from_lse_kernel<<<grid_for(N), kRowThreads, 0, ctx.stream>>>(losses, lse, picked, N);
  CUDA_CHECK_LAUNCH();
}

void launch_cross_entropy_backward_from_lse(CudaContext& ctx, bf16* logits, const float* lse,
                                            const int* targets, int col_begin, int N, int V,
                                            float dloss) {
  if (N == 0 || V == 0) return;
  if (V % 8 == 0 && aligned_to(logits, 16)) {
    cross_entropy_backward_from_lse_kernel<8>
        <<<grid_for(static_cast<size_t>(N) * V / 8), kRowThreads, 0, ctx.stream>>>(
            logits, lse, targets, col_begin, N, V, dloss);
  } else {
    cross_entropy_backward_from_lse_kernel<1>
        <<<grid_for(static_cast<size_t>(N) * V), kRowThreads, 0, ctx.stream>>>(
            logits, lse, targets, col_begin, N, V, dloss);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace zt
