// The linear layers' small kernels: the bias/GELU epilogue for shapes cuBLASLt
// cannot fuse, the GELU derivative likewise, and the bias gradient.
#include <algorithm>

#include "model/cuda/matmul.cuh"

namespace zt {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float gelu_tanh(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.f + tanhf(u));
}

__device__ __forceinline__ float gelu_tanh_grad(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  const float t = tanhf(u);
  return 0.5f * (1.f + t) +
         0.5f * x * (1.f - t * t) * kGeluScale * (1.f + 3.f * kGeluCubic * x * x);
}

// One thread per VEC consecutive elements of a row of OC; the column index
// picks the bias. Reads d, writes pre_gelu (when GELU) and out.
template <int VEC, bool GELU>
__global__ void bias_gelu_kernel(bf16* out, bf16* pre_gelu, const bf16* d, const bf16* bias, int N,
                                 int OC) {
  const int groups = OC / VEC;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(N) * groups) return;
  const size_t off = idx * VEC;
  const int col = static_cast<int>(idx % groups) * VEC;
  float x[VEC];
  load_bf16<VEC>(x, d + off);
  if (bias) {
    float b[VEC];
    load_bf16<VEC>(b, bias + col);
#pragma unroll
    for (int i = 0; i < VEC; ++i) x[i] += b[i];
  }
  if constexpr (GELU) {
    store_bf16<VEC>(pre_gelu + off, x);
#pragma unroll
    for (int i = 0; i < VEC; ++i) x[i] = gelu_tanh(x[i]);
  }
  store_bf16<VEC>(out + off, x);
}

// Grid-stride over n / VEC groups of VEC elements.
template <int VEC>
__global__ void gelu_backward_kernel(bf16* d, const bf16* pre, size_t groups) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < groups;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float g[VEC], x[VEC];
    load_bf16<VEC>(g, d + i * VEC);
    load_bf16<VEC>(x, pre + i * VEC);
#pragma unroll
    for (int k = 0; k < VEC; ++k) g[k] *= gelu_tanh_grad(x[k]);
    store_bf16<VEC>(d + i * VEC, g);
  }
}

// Bias gradient, stage 1. Block (blockIdx.x, blockIdx.y) covers the 32*VEC
// columns starting at blockIdx.x*32*VEC; lane l owns VEC of them, warp w sums
// rows y*8 + w, y*8 + w + gridDim.y*8, ... The 8 warps' sums are combined in
// warp order through shared memory into partial[blockIdx.y][col] (fp32).
constexpr int kBiasWarps = 8;

template <int VEC>
__global__ void bias_grad_partial_kernel(float* partial, const bf16* dout, int N, int OC) {
  __shared__ float sums[kBiasWarps][32 * VEC];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int col = blockIdx.x * 32 * VEC + lane * VEC;
  float acc[VEC] = {};
  if (col < OC) {
    for (int row = blockIdx.y * kBiasWarps + warp; row < N; row += gridDim.y * kBiasWarps) {
      float v[VEC];
      load_bf16<VEC>(v, dout + static_cast<size_t>(row) * OC + col);
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[i] += v[i];
    }
  }
#pragma unroll
  for (int i = 0; i < VEC; ++i) sums[warp][lane * VEC + i] = acc[i];
  __syncthreads();
  for (int j = threadIdx.x; j < 32 * VEC; j += blockDim.x) {
    const int c = blockIdx.x * 32 * VEC + j;
    if (c >= OC) continue;
    float s = 0.f;
    for (int w = 0; w < kBiasWarps; ++w) s += sums[w][j];
    partial[static_cast<size_t>(blockIdx.y) * OC + c] = s;
  }
}

// Stage 2: one thread per column sums the slices in order and adds into dbias.
__global__ void bias_grad_final_kernel(bf16* dbias, const float* partial, int slices, int OC) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= OC) return;
  float s = 0.f;
  for (int k = 0; k < slices; ++k) s += partial[static_cast<size_t>(k) * OC + c];
  dbias[c] = __float2bfloat16_rn(__bfloat162float(dbias[c]) + s);
}

template <int VEC>
void bias_grad(CudaContext& ctx, bf16* dbias, const bf16* dout, int N, int OC) {
  const int col_blocks = ceil_div(OC, 32 * VEC);
  const int slices =
      std::max(1, std::min({2 * ctx.num_sms / col_blocks, ceil_div(N, kBiasWarps), 65535}));
  float* partial = static_cast<float*>(
      ctx.scratch->get(static_cast<size_t>(slices) * OC * sizeof(float), ctx.stream));
  bias_grad_partial_kernel<VEC>
      <<<dim3(col_blocks, slices), 32 * kBiasWarps, 0, ctx.stream>>>(partial, dout, N, OC);
  CUDA_CHECK_LAUNCH();
  bias_grad_final_kernel<<<ceil_div(OC, 256), 256, 0, ctx.stream>>>(dbias, partial, slices, OC);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_bias_gelu(CudaContext& ctx, bf16* out, bf16* pre_gelu, const bf16* d, const bf16* bias,
                      int N, int OC) {
  if (N == 0 || OC == 0) return;
  const bool vec = OC % 8 == 0 && aligned_to(out, 16) && aligned_to(d, 16) &&
                   (!pre_gelu || aligned_to(pre_gelu, 16)) && (!bias || aligned_to(bias, 16));
  const int threads = 256;
  const size_t groups = static_cast<size_t>(N) * OC / (vec ? 8 : 1);
  const unsigned grid = static_cast<unsigned>(ceil_div(groups, static_cast<size_t>(threads)));
  if (vec && pre_gelu) {
    bias_gelu_kernel<8, true><<<grid, threads, 0, ctx.stream>>>(out, pre_gelu, d, bias, N, OC);
  } else if (vec) {
    bias_gelu_kernel<8, false><<<grid, threads, 0, ctx.stream>>>(out, pre_gelu, d, bias, N, OC);
  } else if (pre_gelu) {
    bias_gelu_kernel<1, true><<<grid, threads, 0, ctx.stream>>>(out, pre_gelu, d, bias, N, OC);
  } else {
    bias_gelu_kernel<1, false><<<grid, threads, 0, ctx.stream>>>(out, pre_gelu, d, bias, N, OC);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_gelu_backward_inplace(CudaContext& ctx, bf16* d, const bf16* pre, size_t n) {
  if (n == 0) return;
  const bool vec = n % 8 == 0 && aligned_to(d, 16) && aligned_to(pre, 16);
  const size_t groups = vec ? n / 8 : n;
  const int threads = 256;
  const unsigned grid = static_cast<unsigned>(std::min(
      ceil_div(groups, static_cast<size_t>(threads)), static_cast<size_t>(ctx.num_sms) * 16));
  if (vec) {
    gelu_backward_kernel<8><<<grid, threads, 0, ctx.stream>>>(d, pre, groups);
  } else {
    gelu_backward_kernel<1><<<grid, threads, 0, ctx.stream>>>(d, pre, groups);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_bias_grad(CudaContext& ctx, bf16* dbias, const bf16* dout, int N, int OC) {
  if (N == 0 || OC == 0) return;
  if (OC % 8 == 0 && aligned_to(dout, 16)) {
    bias_grad<8>(ctx, dbias, dout, N, OC);
  } else {
    bias_grad<1>(ctx, dbias, dout, N, OC);
  }
}

}  // namespace zt
