// Elementwise helpers on bf16 buffers and the deterministic sum of squares.
//
// Elementwise ops share one grid-stride kernel: each thread applies the op to
// groups of VEC = 8 elements (16-byte bf16 accesses) when the pointers allow
// it, and the last n % VEC elements go one per thread.
#include <cuda_fp16.h>

#include <algorithm>

#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

constexpr int kThreads = 256;

struct ToF32 {
  float* dst;
  const bf16* src;
  template <int V>
  __device__ void apply(size_t i) const {
    float x[V];
    load_bf16<V>(x, src + i);
    store_f32<V>(dst + i, x);
  }
};

struct FromF32 {
  bf16* dst;
  const float* src;
  template <int V>
  __device__ void apply(size_t i) const {
    float x[V];
    load_f32<V>(x, src + i);
    store_bf16<V>(dst + i, x);
  }
};

// One element of a wire-dtype conversion (fp32, bf16, fp16), through fp32.
__device__ float load_as_f32(const void* p, DType t, size_t i) {
  if (t == DType::F32) return static_cast<const float*>(p)[i];
  if (t == DType::BF16) return __bfloat162float(static_cast<const bf16*>(p)[i]);
  return __half2float(static_cast<const __half*>(p)[i]);
}
__device__ void store_from_f32(void* p, DType t, size_t i, float x) {
  if (t == DType::F32) static_cast<float*>(p)[i] = x;
  else if (t == DType::BF16) static_cast<bf16*>(p)[i] = __float2bfloat16_rn(x);
  else static_cast<__half*>(p)[i] = __float2half_rn(x);
}

struct Convert {
  void* dst;
  DType dst_t;
  const void* src;
  DType src_t;
  template <int V>
  __device__ void apply(size_t i) const {
#pragma unroll
    for (int k = 0; k < V; ++k) store_from_f32(dst, dst_t, i + k, load_as_f32(src, src_t, i + k));
  }
};

struct AddInplace {
  bf16* dst;
  const bf16* src;
  template <int V>
  __device__ void apply(size_t i) const {
    float a[V], b[V];
    load_bf16<V>(a, dst + i);
    load_bf16<V>(b, src + i);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] += b[k];
    store_bf16<V>(dst + i, a);
  }
};

template <int VEC, typename Op>
__global__ void elementwise_kernel(Op op, size_t n) {
  const size_t groups = n / VEC;
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (size_t i = tid; i < groups; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    op.template apply<VEC>(i * VEC);
  const size_t tail = groups * VEC + tid;
  if (tail < n) op.template apply<1>(tail);
}

unsigned grid_size(const CudaContext& ctx, size_t work) {
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min(ceil_div(work, static_cast<size_t>(kThreads)),
                                   static_cast<size_t>(ctx.num_sms) * 16)));
}

template <typename Op>
void launch_elementwise(CudaContext& ctx, const Op& op, size_t n, bool vec) {
  if (n == 0) return;
  if (vec) {
    elementwise_kernel<8><<<grid_size(ctx, n / 8), kThreads, 0, ctx.stream>>>(op, n);
  } else {
    elementwise_kernel<1><<<grid_size(ctx, n), kThreads, 0, ctx.stream>>>(op, n);
  }
  CUDA_CHECK_LAUNCH();
}

// Sum of squares, stage 1: a fixed grid (from n and the SM count only); each
// thread accumulates its grid-stride share in fp32, the block sums in double,
// block b writes partial[b].
template <int VEC>
__global__ void sum_squares_partial_kernel(double* partial, const bf16* x, size_t n) {
  __shared__ double scratch[32];
  const size_t groups = n / VEC;
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  float acc = 0.f;
  for (size_t i = tid; i < groups; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v[VEC];
    load_bf16<VEC>(v, x + i * VEC);
#pragma unroll
    for (int k = 0; k < VEC; ++k) acc += v[k] * v[k];
  }
  const size_t tail = groups * VEC + tid;
  if (tail < n) {
    const float v = __bfloat162float(x[tail]);
    acc += v * v;
  }
  const double total = block_sum<double>(static_cast<double>(acc), scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// Stage 2: one block sums the partials in a fixed order.
__global__ void sum_squares_final_kernel(double* result, const double* partial, int blocks) {
  __shared__ double scratch[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) acc += partial[i];
  const double total = block_sum<double>(acc, scratch);
  if (threadIdx.x == 0) *result = total;
}

}  // namespace

void launch_to_f32(CudaContext& ctx, float* dst, const bf16* src, size_t n) {
  launch_elementwise(ctx, ToF32{dst, src}, n, aligned_to(dst, 16) && aligned_to(src, 16));
}

void launch_from_f32(CudaContext& ctx, bf16* dst, const float* src, size_t n) {
  launch_elementwise(ctx, FromF32{dst, src}, n, aligned_to(dst, 16) && aligned_to(src, 16));
}

void launch_convert(CudaContext& ctx, void* dst, DType dst_t, const void* src, DType src_t,
                    size_t n) {
  launch_elementwise(ctx, Convert{dst, dst_t, src, src_t}, n, false);
}

void launch_add_inplace(CudaContext& ctx, bf16* dst, const bf16* src, size_t n) {
  launch_elementwise(ctx, AddInplace{dst, src}, n, aligned_to(dst, 16) && aligned_to(src, 16));
}

double sum_squares_bf16(CudaContext& ctx, const bf16* x, size_t n) {
  if (n == 0) return 0.0;
  const bool vec = aligned_to(x, 16);
  const unsigned blocks = grid_size(ctx, vec ? n / 8 : n);
  double* partial =
      static_cast<double*>(ctx.scratch->get((blocks + 1) * sizeof(double), ctx.stream));
  if (vec) {
    sum_squares_partial_kernel<8><<<blocks, kThreads, 0, ctx.stream>>>(partial + 1, x, n);
  } else {
    sum_squares_partial_kernel<1><<<blocks, kThreads, 0, ctx.stream>>>(partial + 1, x, n);
  }
  CUDA_CHECK_LAUNCH();
  sum_squares_final_kernel<<<1, kThreads, 0, ctx.stream>>>(partial, partial + 1,
                                                           static_cast<int>(blocks));
  CUDA_CHECK_LAUNCH();
  double result = 0.0;
  CUDA_CHECK(cudaMemcpyAsync(&result, partial, sizeof(double), cudaMemcpyDeviceToHost, ctx.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  return result;
}

}  // namespace zt
