// Shared pieces of the CUDA backend: error checks that throw, bf16 conversions,
// 16-byte vector loads/stores and warp/block reductions.
#pragma once
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zt {

using bf16 = __nv_bfloat16;

[[noreturn]] inline void throw_cuda_error(const char* what, const char* call, const char* file,
                                          int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + what);
}

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t zt_err_ = (call);                                                     \
    if (zt_err_ != cudaSuccess)                                                       \
      ::zt::throw_cuda_error(cudaGetErrorString(zt_err_), #call, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(call)                                                              \
  do {                                                                                  \
    cublasStatus_t zt_st_ = (call);                                                     \
    if (zt_st_ != CUBLAS_STATUS_SUCCESS)                                                \
      ::zt::throw_cuda_error(cublasGetStatusString(zt_st_), #call, __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: catches bad configurations at the launch site.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

inline bool aligned_to(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// ---- vector access: VEC consecutive elements in one 16- or 8-byte access ----
// Kernels are templated on VEC; the launcher picks the vector width when the row
// length and the pointers allow it and falls back to VEC = 1 otherwise.

template <int VEC>
__device__ __forceinline__ void load_bf16(float (&dst)[VEC], const bf16* src) {
  if constexpr (VEC == 8) {
    uint4 raw = *reinterpret_cast<const uint4*>(src);
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 f = __bfloat1622float2(h[i]);
      dst[2 * i] = f.x;
      dst[2 * i + 1] = f.y;
    }
  } else if constexpr (VEC == 4) {
    uint2 raw = *reinterpret_cast<const uint2*>(src);
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
    const float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
    dst[0] = a.x;
    dst[1] = a.y;
    dst[2] = b.x;
    dst[3] = b.y;
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) dst[i] = __bfloat162float(src[i]);
  }
}

template <int VEC>
__device__ __forceinline__ void store_bf16(bf16* dst, const float (&src)[VEC]) {
  if constexpr (VEC == 8) {
    uint4 raw;
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(src[2 * i], src[2 * i + 1]);
    *reinterpret_cast<uint4*>(dst) = raw;
  } else if constexpr (VEC == 4) {
    uint2 raw;
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&raw);
    h[0] = __floats2bfloat162_rn(src[0], src[1]);
    h[1] = __floats2bfloat162_rn(src[2], src[3]);
    *reinterpret_cast<uint2*>(dst) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) dst[i] = __float2bfloat16_rn(src[i]);
  }
}

template <int VEC>
__device__ __forceinline__ void load_f32(float (&dst)[VEC], const float* src) {
  if constexpr (VEC % 4 == 0) {
#pragma unroll
    for (int i = 0; i < VEC; i += 4) {
      float4 v = *reinterpret_cast<const float4*>(src + i);
      dst[i] = v.x;
      dst[i + 1] = v.y;
      dst[i + 2] = v.z;
      dst[i + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) dst[i] = src[i];
  }
}

template <int VEC>
__device__ __forceinline__ void store_f32(float* dst, const float (&src)[VEC]) {
  if constexpr (VEC % 4 == 0) {
#pragma unroll
    for (int i = 0; i < VEC; i += 4)
      *reinterpret_cast<float4*>(dst + i) = make_float4(src[i], src[i + 1], src[i + 2], src[i + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) dst[i] = src[i];
  }
}

// ---- reductions (fixed shuffle trees: the same inputs give the same bits) ----

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Sum over the whole block; every thread gets the result. blockDim.x must be a
// multiple of 32 and at most 1024; `scratch` holds 32 values.
template <typename T>
__device__ T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = lane < nwarps ? scratch[lane] : T(0);
  return warp_sum(total);
}

}  // namespace zt
