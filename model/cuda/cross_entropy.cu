// Fused softmax + cross-entropy (+ gradient in place) over logits[N, V].
//
// One block per row. Pass 1: each thread walks its VEC-wide chunks of the row
// keeping an online (max, sum of exp) pair; pairs are merged across the warp
// with shuffles and across warps through shared memory, giving the row's
// log-sum-exp in fp32. loss = lse - logit[target]. Pass 2 (gradient variant)
// rewrites the row as dloss * (softmax - onehot(target)) in bf16. The target
// logit is read before the block-wide merge, so before pass 2 overwrites it.
// An out-of-range target yields a NaN loss (visible, never an out-of-bounds read).
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

template <int VEC, bool GRAD>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_kernel(float* losses, const bf16* logits, bf16* grad, const int* targets, int V,
                         float dloss) {
  __shared__ MaxSum warp_parts[kThreads / 32];
  __shared__ float row_lse;
  const size_t off = static_cast<size_t>(blockIdx.x) * V;
  const bf16* x = logits + off;
  const int target = targets[blockIdx.x];
  const bool valid = target >= 0 && target < V;
  const float x_target = (threadIdx.x == 0 && valid) ? __bfloat162float(x[target]) : 0.f;

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
    const float lse = total.m + logf(total.s);
    row_lse = lse;
    losses[blockIdx.x] = valid ? lse - x_target : NAN;
  }
  if constexpr (GRAD) {
    __syncthreads();
    const float lse = row_lse;
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

}  // namespace zt
