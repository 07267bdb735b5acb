// LayerNorm over rows of C channels: forward, fused residual-add + forward,
// and a deterministic backward (no float atomics anywhere).
#include <algorithm>
#include <stdexcept>

#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

constexpr float kEps = 1e-5f;
constexpr int kForwardWarps = 8;

// One warp per row, lanes striding over the channels VEC at a time: pass 1 the
// mean, pass 2 the variance around it (two passes for accuracy), pass 3 the
// normalized output. The re-reads of the row hit L1/L2. In RESIDUAL mode pass 1
// also forms residual = a + b, stores it rounded to bf16 and normalizes those
// rounded values, so that out is exactly layernorm(residual as stored).
template <int VEC, bool RESIDUAL>
__global__ void layernorm_forward_kernel(bf16* residual, bf16* out, float* mean, float* rstd,
                                         const bf16* a, const bf16* b, const bf16* w,
                                         const bf16* bias, int N, int C) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kForwardWarps + threadIdx.x / 32;
  if (row >= N) return;
  const size_t off = static_cast<size_t>(row) * C;
  const bf16* x = RESIDUAL ? residual + off : a + off;

  float sum = 0.f;
  for (int c = lane * VEC; c < C; c += 32 * VEC) {
    float v[VEC];
    load_bf16<VEC>(v, a + off + c);
    if constexpr (RESIDUAL) {
      float v2[VEC];
      load_bf16<VEC>(v2, b + off + c);
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] = __bfloat162float(__float2bfloat16_rn(v[i] + v2[i]));
      store_bf16<VEC>(residual + off + c, v);
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) sum += v[i];
  }
  const float mu = warp_sum(sum) / C;

  float sq = 0.f;
  for (int c = lane * VEC; c < C; c += 32 * VEC) {
    float v[VEC];
    load_bf16<VEC>(v, x + c);
#pragma unroll
    for (int i = 0; i < VEC; ++i) sq += (v[i] - mu) * (v[i] - mu);
  }
  const float rs = rsqrtf(warp_sum(sq) / C + kEps);

  for (int c = lane * VEC; c < C; c += 32 * VEC) {
    float v[VEC], wv[VEC], bv[VEC];
    load_bf16<VEC>(v, x + c);
    load_bf16<VEC>(wv, w + c);
    load_bf16<VEC>(bv, bias + c);
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = (v[i] - mu) * rs * wv[i] + bv[i];
    store_bf16<VEC>(out + off + c, v);
  }
  if (lane == 0) {
    if (mean) mean[row] = mu;
    if (rstd) rstd[row] = rs;
  }
}

// Backward, stage 1. A grid of G blocks; each warp takes rows
// warp_global, warp_global + G*warps, ... For a row it first reduces the two
// row means the input gradient needs, then adds that gradient into dinp and
// accumulates dout*xhat and dout into its OWN shared-memory copy of dw/db
// (lanes own fixed channels, so no atomics). The block then sums its warps'
// copies in warp order into partial[blockIdx.x] = [dw(C) | db(C)] in fp32.
// Shared copies are stored lane-minor (see grad_slot) so that a warp's VEC-wide
// updates hit 32 different banks; each copy is padded to whole 32*VEC chunks.
template <int VEC>
__device__ __forceinline__ int grad_slot(int c) {
  const int chunk = c / (32 * VEC), within = c % (32 * VEC);
  return chunk * 32 * VEC + (within % VEC) * 32 + within / VEC;
}

template <int VEC>
__host__ __device__ inline int padded_channels(int C) {
  return (C + 32 * VEC - 1) / (32 * VEC) * (32 * VEC);
}

template <int VEC>
__global__ void layernorm_backward_kernel(bf16* dinp, float* partial, const bf16* dout,
                                          const bf16* inp, const bf16* w, const float* mean,
                                          const float* rstd, int N, int C) {
  extern __shared__ float warp_grads[];  // [warps][2][Cp]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int Cp = padded_channels<VEC>(C);
  for (int i = threadIdx.x; i < warps * 2 * Cp; i += blockDim.x) warp_grads[i] = 0.f;
  __syncthreads();
  float* my_dw = warp_grads + static_cast<size_t>(warp) * 2 * Cp;
  float* my_db = my_dw + Cp;

  for (int row = blockIdx.x * warps + warp; row < N; row += gridDim.x * warps) {
    const size_t off = static_cast<size_t>(row) * C;
    const float mu = mean[row], rs = rstd[row];
    float sum_dn = 0.f, sum_dn_x = 0.f;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
      float d[VEC], x[VEC], wv[VEC];
      load_bf16<VEC>(d, dout + off + c);
      load_bf16<VEC>(x, inp + off + c);
      load_bf16<VEC>(wv, w + c);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float dn = d[i] * wv[i];
        sum_dn += dn;
        sum_dn_x += dn * (x[i] - mu) * rs;
      }
    }
    const float mean_dn = warp_sum(sum_dn) / C;
    const float mean_dn_x = warp_sum(sum_dn_x) / C;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
      float d[VEC], x[VEC], wv[VEC], di[VEC];
      load_bf16<VEC>(d, dout + off + c);
      load_bf16<VEC>(x, inp + off + c);
      load_bf16<VEC>(wv, w + c);
      load_bf16<VEC>(di, dinp + off + c);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float xhat = (x[i] - mu) * rs;
        di[i] += (d[i] * wv[i] - mean_dn - xhat * mean_dn_x) * rs;
        const int slot = grad_slot<VEC>(c + i);
        my_dw[slot] += d[i] * xhat;
        my_db[slot] += d[i];
      }
      store_bf16<VEC>(dinp + off + c, di);
    }
  }
  __syncthreads();
  float* out = partial + static_cast<size_t>(blockIdx.x) * 2 * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const int slot = grad_slot<VEC>(c);
    float sw = 0.f, sb = 0.f;
    for (int k = 0; k < warps; ++k) {
      sw += warp_grads[static_cast<size_t>(k) * 2 * Cp + slot];
      sb += warp_grads[static_cast<size_t>(k) * 2 * Cp + Cp + slot];
    }
    out[c] = sw;
    out[C + c] = sb;
  }
}

// Backward, stage 2: the G block partials of each channel, summed in a fixed
// order. A block takes 32 channels (one per lane, so every load of a warp is one
// 128-byte line); its warps stride over the partials (warp k takes g = k,
// k + warps, ...), then warp 0 adds the warps' sums in warp order into dw, db.
// Many warps per channel keep enough loads in flight to hide memory latency.
constexpr int kParamGradWarps = 32;
__global__ void layernorm_param_grad_kernel(bf16* dw, bf16* db, const float* partial, int G,
                                            int C) {
  __shared__ float sums[2][kParamGradWarps][33];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = blockIdx.x * 32 + lane;
  float sw = 0.f, sb = 0.f;
  if (c < C) {
    for (int g = warp; g < G; g += kParamGradWarps) {
      sw += partial[static_cast<size_t>(g) * 2 * C + c];
      sb += partial[static_cast<size_t>(g) * 2 * C + C + c];
    }
  }
  sums[0][warp][lane] = sw;
  sums[1][warp][lane] = sb;
  __syncthreads();
  if (warp != 0 || c >= C) return;
  float tw = 0.f, tb = 0.f;
  for (int k = 0; k < kParamGradWarps; ++k) {
    tw += sums[0][k][lane];
    tb += sums[1][k][lane];
  }
  dw[c] = __float2bfloat16_rn(__bfloat162float(dw[c]) + tw);
  db[c] = __float2bfloat16_rn(__bfloat162float(db[c]) + tb);
}

template <bool RESIDUAL>
void forward(CudaContext& ctx, bf16* residual, bf16* out, float* mean, float* rstd, const bf16* a,
             const bf16* b, const bf16* w, const bf16* bias, int N, int C) {
  if (N == 0 || C == 0) return;
  const bool vec = C % 8 == 0 && aligned_to(out, 16) && aligned_to(a, 16) && aligned_to(w, 16) &&
                   aligned_to(bias, 16) &&
                   (!RESIDUAL || (aligned_to(residual, 16) && aligned_to(b, 16)));
  const int grid = ceil_div(N, kForwardWarps);
  if (vec) {
    layernorm_forward_kernel<8, RESIDUAL><<<grid, 32 * kForwardWarps, 0, ctx.stream>>>(
        residual, out, mean, rstd, a, b, w, bias, N, C);
  } else {
    layernorm_forward_kernel<1, RESIDUAL><<<grid, 32 * kForwardWarps, 0, ctx.stream>>>(
        residual, out, mean, rstd, a, b, w, bias, N, C);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_layernorm_forward(CudaContext& ctx, bf16* out, float* mean, float* rstd,
                              const bf16* inp, const bf16* w, const bf16* b, int N, int C) {
  forward<false>(ctx, nullptr, out, mean, rstd, inp, nullptr, w, b, N, C);
}

void launch_residual_layernorm_forward(CudaContext& ctx, bf16* residual, bf16* out, float* mean,
                                       float* rstd, const bf16* a, const bf16* b, const bf16* w,
                                       const bf16* bias, int N, int C) {
  forward<true>(ctx, residual, out, mean, rstd, a, b, w, bias, N, C);
}

void launch_layernorm_backward(CudaContext& ctx, bf16* dinp, bf16* dw, bf16* db, const bf16* dout,
                               const bf16* inp, const bf16* w, const float* mean, const float* rstd,
                               int N, int C) {
  if (N == 0 || C == 0) return;
  const bool vec = C % 8 == 0 && aligned_to(dinp, 16) && aligned_to(dout, 16) &&
                   aligned_to(inp, 16) && aligned_to(w, 16);
  const int Cp = vec ? padded_channels<8>(C) : padded_channels<1>(C);
  // Four warps per block, fewer when their shared dw/db copies would not fit.
  int warps = 4;
  while (warps > 1 && static_cast<size_t>(warps) * 2 * Cp * sizeof(float) > ctx.max_smem_per_block)
    warps /= 2;
  const size_t smem = static_cast<size_t>(warps) * 2 * Cp * sizeof(float);
  if (smem > ctx.max_smem_per_block)
    throw std::runtime_error("layernorm_backward: C = " + std::to_string(C) +
                             " needs more shared memory than the device has");
  // Up to eight blocks per multiprocessor: each warp works on one row at a time,
  // so occupancy is what hides the latency of its loads.
  const int G = std::max(1, std::min(ceil_div(N, warps), 8 * ctx.num_sms));
  float* partial = static_cast<float*>(
      ctx.scratch->get(static_cast<size_t>(G) * 2 * C * sizeof(float), ctx.stream));
  if (vec) {
    CUDA_CHECK(cudaFuncSetAttribute(layernorm_backward_kernel<8>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)));
    layernorm_backward_kernel<8>
        <<<G, 32 * warps, smem, ctx.stream>>>(dinp, partial, dout, inp, w, mean, rstd, N, C);
  } else {
    CUDA_CHECK(cudaFuncSetAttribute(layernorm_backward_kernel<1>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)));
    layernorm_backward_kernel<1>
        <<<G, 32 * warps, smem, ctx.stream>>>(dinp, partial, dout, inp, w, mean, rstd, N, C);
  }
  CUDA_CHECK_LAUNCH();
  layernorm_param_grad_kernel<<<ceil_div(C, 32), 32 * kParamGradWarps, 0, ctx.stream>>>(
      dw, db, partial, G, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace zt
