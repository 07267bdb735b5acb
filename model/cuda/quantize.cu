// Blockwise symmetric quantization (ZeRO++'s qwZ weights and qgZ gradients):
// the kernels behind DeviceServices::quantize_blocks / dequantize_blocks (model/device_services.h).
// Codes and scales equal the CPU reference (model/cpu/cpu_quantize.cpp) bit for
// bit: the same fp32 division amax / qmax and x / scale, rintf (half to even),
// the same clamp, no fast math; the max reduction is exact in any order.
#include <cuda_fp16.h>

#include <algorithm>

#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

// U consecutive elements of T in one access (two 16-byte ones past 16 bytes);
// the launchers check that the addresses are aligned to alignof(Pack).
template <typename T, int U>
struct alignas(U * sizeof(T) < 16 ? U * sizeof(T) : 16) Pack {
  T v[U];
};

template <typename T, int U>
__device__ __forceinline__ void load_pack(float (&dst)[U], const T* src) {
  const Pack<T, U> p = *reinterpret_cast<const Pack<T, U>*>(src);
#pragma unroll
  for (int k = 0; k < U; ++k) dst[k] = to_float(p.v[k]);
}

template <typename T, int U>
__device__ __forceinline__ void store_pack(T* dst, const float (&src)[U]) {
  Pack<T, U> p;
#pragma unroll
  for (int k = 0; k < U; ++k) p.v[k] = from_float<T>(src[k]);
  *reinterpret_cast<Pack<T, U>*>(dst) = p;
}

// One unit of quantize input: vector units (U >= 4) in one access, aligned by
// the launcher; narrow units (U <= 2) element by element, since they start
// anywhere an element can.
template <typename T, int U>
__device__ __forceinline__ void load_unit(float (&dst)[U], const T* src) {
  if constexpr (U >= 4) {
    load_pack<T, U>(dst, src);
  } else {
#pragma unroll
    for (int k = 0; k < U; ++k) dst[k] = to_float(src[k]);
  }
}

// Max over the G threads of a group: G lanes of one warp (G <= 32, groups
// aligned to G lanes, so xor offsets below G stay inside the group), or the
// whole thread block (G == blockDim.x, `scratch` holds one value per warp).
template <int G>
__device__ __forceinline__ float group_max(float v, float* scratch) {
  constexpr int kWidth = G < 32 ? G : 32;
#pragma unroll
  for (int off = kWidth / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  if constexpr (G > 32) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    __syncthreads();  // the previous block's readers are done with scratch
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
#pragma unroll
    for (int w = 1; w < G / 32; ++w) v = fmaxf(v, scratch[w]);
  }
  return v;
}

// The code of x with scale s, exactly as cpu::quantize_block computes it.
__device__ __forceinline__ int quant_code(float x, float s, float qmax) {
  if (!(s > 0.f)) return 0;
  const float r = rintf(__fdiv_rn(x, s));
  return static_cast<int>(fminf(fmaxf(r, -qmax), qmax));
}

// A two's complement nibble as an int.
__device__ __forceinline__ int sign_extend4(uint32_t nibble) {
  return nibble >= 8 ? static_cast<int>(nibble) - 16 : static_cast<int>(nibble);
}

// quantize_blocks. Layout: x[n] in quantization blocks of `block` elements
// (block b starts at element b * block, the last one may be shorter); q holds
// one int8 per element (BITS 8) or one nibble (BITS 4, element 2i in the low
// nibble of byte i, so block b's codes start at byte b * block / 2).
// Parallel strategy: a group of G threads per quantization block (G = 8 or 32
// lanes of a warp for short blocks, the whole 256-thread block for long ones),
// grid-striding over blocks with a loop bound uniform across the thread block
// (so every lane takes part in the shuffles). Each thread owns units of U
// consecutive elements, unit j, j + G, ...: pass 1 reduces max|x| over the
// group, lane 0 writes scale = amax / qmax, pass 2 re-reads x (from L1/L2) and
// writes the unit's codes as whole bytes - U = 1 or 4 int8 codes, U = 2 or 8
// nibbles - so no two threads ever write one byte.
template <typename T, int BITS, int U, int G>
__global__ void quantize_blocks_kernel(uint8_t* q, float* scales, const T* x, size_t n,
                                       size_t block, size_t nblocks) {
  static_assert(BITS == 8 || U % 2 == 0, "4-bit units hold whole bytes");
  __shared__ float scratch[kThreads / 32];
  constexpr int kGroups = kThreads / G;
  constexpr float kQmax = BITS == 8 ? 127.f : 7.f;
  const int group = threadIdx.x / G, lane = threadIdx.x % G;
  for (size_t first = static_cast<size_t>(blockIdx.x) * kGroups; first < nblocks;
       first += static_cast<size_t>(gridDim.x) * kGroups) {
    const size_t b = first + group;
    const size_t at = b * block;
    const size_t units = b < nblocks ? (min(block, n - at)) / U : 0;
    float amax = 0.f;
    for (size_t j = lane; j < units; j += G) {
      float v[U];
      load_unit<T, U>(v, x + at + j * U);
#pragma unroll
      for (int k = 0; k < U; ++k) amax = fmaxf(amax, fabsf(v[k]));
    }
    amax = group_max<G>(amax, scratch);
    if (b >= nblocks) continue;
    const float s = __fdiv_rn(amax, kQmax);
    if (lane == 0) scales[b] = s;
    for (size_t j = lane; j < units; j += G) {
      float v[U];
      load_unit<T, U>(v, x + at + j * U);
      uint32_t bits = 0;
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const uint32_t code = static_cast<uint32_t>(quant_code(v[k], s, kQmax));
        bits |= BITS == 8 ? (code & 0xFFu) << (8 * k) : (code & 0xFu) << (4 * k);
      }
      uint8_t* dst = q + (BITS == 8 ? at + j * U : (at + j * U) / 2);
      if constexpr (U * BITS == 32) {
        *reinterpret_cast<uint32_t*>(dst) = bits;
      } else {
        *dst = static_cast<uint8_t>(bits);
      }
    }
  }
}

// The codes of elements first .. first + U - 1: U = 8 reads them in one 8-byte
// (int8) or 4-byte (nibbles) load, aligned by the launcher.
template <int BITS, int U>
__device__ __forceinline__ void load_codes(int (&codes)[U], const uint8_t* q, size_t first) {
  if constexpr (U == 8 && BITS == 8) {
    const uint2 w = *reinterpret_cast<const uint2*>(q + first);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      codes[k] = static_cast<int8_t>(w.x >> (8 * k));
      codes[k + 4] = static_cast<int8_t>(w.y >> (8 * k));
    }
  } else if constexpr (U == 8) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(q + first / 2);
#pragma unroll
    for (int k = 0; k < 8; ++k) codes[k] = sign_extend4((w >> (4 * k)) & 0xF);
  } else {
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const size_t e = first + k;
      codes[k] = BITS == 8 ? static_cast<int8_t>(q[e])
                           : sign_extend4(e % 2 == 0 ? q[e / 2] & 0xF : q[e / 2] >> 4);
    }
  }
}

// Dequantizes elements first .. first + U - 1 (see the kernel below).
template <typename OT, int BITS, int U>
__device__ __forceinline__ void dequantize_run(OT* out, const uint8_t* q, const float* scales,
                                               size_t first, size_t block, bool accumulate) {
  size_t b = first / block, next = (b + 1) * block;
  float s = scales[b];
  int codes[U];
  load_codes<BITS, U>(codes, q, first);
  float v[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    if (first + k == next) {
      s = scales[++b];
      next += block;
    }
    v[k] = __fmul_rn(static_cast<float>(codes[k]), s);
  }
  if (accumulate) {
    float prev[U];
    load_pack<OT, U>(prev, out + first);
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = __fadd_rn(prev[k], v[k]);
  }
  store_pack<OT, U>(out + first, v);
}

// dequantize_blocks. Layout as above; out[n] of OT. Parallel strategy:
// grid-stride over groups of U consecutive elements (U = 8 when the pointers
// allow 8- or 4-byte code loads and 16-byte output accesses, else 1), then the
// last n % U elements one per thread. A group looks its first scale up with
// one division and steps to the next block where it crosses a block boundary.
// code * scale and the accumulate's add are single-rounded fp32 operations
// (__fmul_rn, __fadd_rn: never fused into an fma), as on the CPU.
template <typename OT, int BITS, int U>
__global__ void dequantize_blocks_kernel(OT* out, const uint8_t* q, const float* scales, size_t n,
                                         size_t block, bool accumulate) {
  const size_t groups = n / U;
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (size_t g = tid; g < groups; g += static_cast<size_t>(gridDim.x) * blockDim.x)
    dequantize_run<OT, BITS, U>(out, q, scales, g * U, block, accumulate);
  const size_t tail = groups * U + tid;
  if (tail < n) dequantize_run<OT, BITS, 1>(out, q, scales, tail, block, accumulate);
}

unsigned grid_for(const CudaContext& ctx, size_t work_items, size_t per_block) {
  return static_cast<unsigned>(std::max<size_t>(
      1, std::min(ceil_div(work_items, per_block), static_cast<size_t>(ctx.num_sms) * 8)));
}

template <typename T, int BITS, int U>
void launch_quantize_units(CudaContext& ctx, uint8_t* q, float* scales, const T* x, size_t n,
                           size_t block) {
  const size_t nblocks = ceil_div(n, block), units = block / U;
  if (units <= 16) {
    quantize_blocks_kernel<T, BITS, U, 8>
        <<<grid_for(ctx, nblocks, kThreads / 8), kThreads, 0, ctx.stream>>>(q, scales, x, n, block,
                                                                            nblocks);
  } else if (units <= 2048) {
    quantize_blocks_kernel<T, BITS, U, 32>
        <<<grid_for(ctx, nblocks, kThreads / 32), kThreads, 0, ctx.stream>>>(q, scales, x, n, block,
                                                                             nblocks);
  } else {
    quantize_blocks_kernel<T, BITS, U, kThreads>
        <<<grid_for(ctx, nblocks, 1), kThreads, 0, ctx.stream>>>(q, scales, x, n, block, nblocks);
  }
  CUDA_CHECK_LAUNCH();
}

// Vector units when every block holds whole units and every unit's input and
// code bytes are aligned; otherwise the narrowest unit (1 code, or 1 byte).
template <typename T, int BITS>
void launch_quantize_typed(CudaContext& ctx, uint8_t* q, float* scales, const T* x, size_t n,
                           size_t block) {
  constexpr int kVec = BITS == 8 ? 4 : 8, kNarrow = BITS == 8 ? 1 : 2;
  const bool vec = block % kVec == 0 && n % kVec == 0 && aligned_to(q, 4) &&
                   aligned_to(x, alignof(Pack<T, kVec>));
  if (vec) {
    launch_quantize_units<T, BITS, kVec>(ctx, q, scales, x, n, block);
  } else {
    launch_quantize_units<T, BITS, kNarrow>(ctx, q, scales, x, n, block);
  }
}

template <int BITS>
void launch_quantize_bits(CudaContext& ctx, uint8_t* q, float* scales, const void* x, DType xt,
                          size_t n, size_t block) {
  if (xt == DType::F32) {
    launch_quantize_typed<float, BITS>(ctx, q, scales, static_cast<const float*>(x), n, block);
  } else if (xt == DType::BF16) {
    launch_quantize_typed<bf16, BITS>(ctx, q, scales, static_cast<const bf16*>(x), n, block);
  } else {
    launch_quantize_typed<__half, BITS>(ctx, q, scales, static_cast<const __half*>(x), n, block);
  }
}

template <typename OT, int BITS>
void launch_dequantize_typed(CudaContext& ctx, OT* out, const uint8_t* q, const float* scales,
                             size_t n, size_t block, bool accumulate) {
  constexpr int kVec = 8;
  const bool vec = aligned_to(q, kVec * BITS / 8) && aligned_to(out, alignof(Pack<OT, kVec>));
  if (vec) {
    dequantize_blocks_kernel<OT, BITS, kVec>
        <<<grid_for(ctx, n / kVec, kThreads), kThreads, 0, ctx.stream>>>(out, q, scales, n, block,
                                                                         accumulate);
  } else {
    dequantize_blocks_kernel<OT, BITS, 1><<<grid_for(ctx, n, kThreads), kThreads, 0, ctx.stream>>>(
        out, q, scales, n, block, accumulate);
  }
  CUDA_CHECK_LAUNCH();
}

template <int BITS>
void launch_dequantize_bits(CudaContext& ctx, void* out, DType ot, const uint8_t* q,
                            const float* scales, size_t n, size_t block, bool accumulate) {
  if (ot == DType::F32) {
    launch_dequantize_typed<float, BITS>(ctx, static_cast<float*>(out), q, scales, n, block,
                                         accumulate);
  } else if (ot == DType::BF16) {
    launch_dequantize_typed<bf16, BITS>(ctx, static_cast<bf16*>(out), q, scales, n, block,
                                        accumulate);
  } else {
    launch_dequantize_typed<__half, BITS>(ctx, static_cast<__half*>(out), q, scales, n, block,
                                          accumulate);
  }
}

}  // namespace

void launch_quantize_blocks(CudaContext& ctx, void* q, float* scales, const void* x, DType xt,
                            size_t n, size_t block, int bits) {
  if (n == 0) return;
  uint8_t* codes = static_cast<uint8_t*>(q);
  if (bits == 8) {
    launch_quantize_bits<8>(ctx, codes, scales, x, xt, n, block);
  } else {
    launch_quantize_bits<4>(ctx, codes, scales, x, xt, n, block);
  }
}

void launch_dequantize_blocks(CudaContext& ctx, void* out, DType ot, const void* q,
                              const float* scales, size_t n, size_t block, int bits,
                              bool accumulate) {
  if (n == 0) return;
  const uint8_t* codes = static_cast<const uint8_t*>(q);
  if (bits == 8) {
    launch_dequantize_bits<8>(ctx, out, ot, codes, scales, n, block, accumulate);
  } else {
    launch_dequantize_bits<4>(ctx, out, ot, codes, scales, n, block, accumulate);
  }
}

}  // namespace zt
