// Causal flash-attention forward, bf16 tensor cores (mma.sync m16n8k16).
//
// Layout: qkv[B, T, 3C] with q | k | v per token, head h at columns h*HS of
// each part; out[B, T, C]; lse[B, NH, T] (natural log, of the scaled scores).
//
// Strategy: one block of 4 warps per (64-query tile, batch*head). The Q tile is
// loaded once into registers (each warp owns 16 query rows); K/V tiles of 64
// keys stream through double-buffered shared memory with cp.async, tile j+1
// loading while tile j is used. Per K/V tile a warp computes S = Q K^T (16x64,
// fp32 registers), applies the causal mask on the diagonal tile, updates the
// online softmax (running max m and sum l per row, in the log2 domain), packs
// P to bf16 and accumulates O += P V. The T x T scores never leave registers.
// Blocks are launched heaviest first (last query tiles see the most keys).
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "model/cuda/attention_common.cuh"
#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

using namespace attn;

template <int HS>
constexpr size_t forward_smem_bytes() {
  return static_cast<size_t>(5) * kTile * smem_stride<HS>() * sizeof(bf16);  // Q, 2 K, 2 V
}

template <int HS>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(bf16* out, float* lse, const bf16* qkv, int T, int NH,
                             float scale_log2) {
  constexpr int S = smem_stride<HS>();
  constexpr int KS = HS / 16;  // k-steps over the head dimension
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sK = sQ + kTile * S;      // [2][kTile][S]
  bf16* sV = sK + 2 * kTile * S;  // [2][kTile][S]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int num_tiles = (T + kTile - 1) / kTile;
  const int q_tile = num_tiles - 1 - blockIdx.x;
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
  const int C = NH * HS;
  const size_t row_stride = 3 * static_cast<size_t>(C);
  const bf16* q_base = qkv + static_cast<size_t>(b) * T * row_stride + h * HS;
  const bf16* k_base = q_base + C;
  const bf16* v_base = q_base + 2 * C;
  const int q0 = q_tile * kTile;
  const int num_kv = q_tile + 1;  // causal: key tiles 0..q_tile

  load_tile_async<HS>(sQ, q_base, row_stride, q0, T);
  load_tile_async<HS>(sK, k_base, row_stride, 0, T);
  load_tile_async<HS>(sV, v_base, row_stride, 0, T);
  cp_async_commit();

  uint32_t qf[KS][4];
  float o[HS / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY};  // running max of rows g and g+8 (log2 domain)
  float l[2] = {0.f, 0.f};              // this thread's share of the running sums

  for (int j = 0; j < num_kv; ++j) {
    const int buf = j % 2;
    if (j + 1 < num_kv) {
      const int nb = (j + 1) % 2;
      load_tile_async<HS>(sK + nb * kTile * S, k_base, row_stride, (j + 1) * kTile, T);
      load_tile_async<HS>(sV + nb * kTile * S, v_base, row_stride, (j + 1) * kTile, T);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) load_a(qf[ks], sQ, S, warp * 16, ks * 16, lane);
    }
    const bf16* tK = sK + buf * kTile * S;
    const bf16* tV = sV + buf * kTile * S;

    // S = Q K^T for this warp's 16 rows and the tile's 64 keys.
    float s[8][4] = {};
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
#pragma unroll
      for (int n2 = 0; n2 < 4; ++n2) {
        uint32_t kf[4];
        load_b_rows(kf, tK, S, n2 * 16, ks * 16, lane);
        mma_bf16(s[2 * n2], qf[ks], kf[0], kf[1]);
        mma_bf16(s[2 * n2 + 1], qf[ks], kf[2], kf[3]);
      }
    }

    // Scale into the log2 domain; on the diagonal tile mask keys after the
    // query (this also masks keys >= T for every query < T; rows >= T are
    // computed on zero-filled data and never stored).
    const bool diagonal = j == q_tile;
    const int row_a = q0 + warp * 16 + g;
#pragma unroll
    for (int nb = 0; nb < 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = j * kTile + nb * 8 + 2 * q + (e & 1);
        const int row = row_a + (e >= 2 ? 8 : 0);
        s[nb][e] = (diagonal && key > row) ? -INFINITY : s[nb][e] * scale_log2;
      }
    }

    // Online softmax: new row max over the quad (the 4 lanes sharing a row).
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float mx = -INFINITY;
#pragma unroll
      for (int nb = 0; nb < 8; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * half], s[nb][2 * half + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[half], mx);
      // Key 0 is visible to every row in tile 0, so m_new is finite; the guard
      // keeps exp2 away from (-inf) - (-inf) all the same.
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = exp2f(m[half] - m_use);
      m[half] = m_new;
      float rowsum = 0.f;
#pragma unroll
      for (int nb = 0; nb < 8; ++nb) {
        s[nb][2 * half] = exp2f(s[nb][2 * half] - m_use);
        s[nb][2 * half + 1] = exp2f(s[nb][2 * half + 1] - m_use);
        rowsum += s[nb][2 * half] + s[nb][2 * half + 1];
      }
      l[half] = l[half] * alpha + rowsum;
#pragma unroll
      for (int nd = 0; nd < HS / 8; ++nd) {
        o[nd][2 * half] *= alpha;
        o[nd][2 * half + 1] *= alpha;
      }
    }

    // O += P V, P packed from the score fragments 16 keys at a time.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint32_t pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]),
                              pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int n2 = 0; n2 < HS / 16; ++n2) {
        uint32_t vf[4];
        load_b_cols(vf, tV, S, kk * 16, n2 * 16, lane);
        mma_bf16(o[2 * n2], pa, vf[0], vf[1]);
        mma_bf16(o[2 * n2 + 1], pa, vf[2], vf[3]);
      }
    }
    __syncthreads();  // the next iteration's prefetch overwrites this buffer
  }

  // Finish: full row sums across the quad, normalize, write lse and O.
  float inv_l[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float sum = l[half];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    inv_l[half] = 1.f / sum;
    const int row = q0 + warp * 16 + g + 8 * half;
    if (lse && q == 0 && row < T)
      lse[static_cast<size_t>(bh) * T + row] = (m[half] + log2f(sum)) * kLn2;
  }
#pragma unroll
  for (int nd = 0; nd < HS / 8; ++nd) {
    o[nd][0] *= inv_l[0];
    o[nd][1] *= inv_l[0];
    o[nd][2] *= inv_l[1];
    o[nd][3] *= inv_l[1];
  }
  // Each warp stages through its own 16 rows of sQ, which only it has read.
  store_rows<HS>(out + static_cast<size_t>(b) * T * C + h * HS, C, q0, T, o, 1.f, sQ, warp, lane);
}

template <int HS>
void launch(CudaContext& ctx, bf16* out, float* lse, const bf16* qkv, int B, int T, int NH) {
  constexpr size_t smem = forward_smem_bytes<HS>();
  if (smem > ctx.max_smem_per_block)
    throw std::runtime_error("attention_forward: head size " + std::to_string(HS) +
                             " needs more shared memory than the device allows");
  CUDA_CHECK(cudaFuncSetAttribute(attention_forward_kernel<HS>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)));
  const float scale_log2 = kLog2e / std::sqrt(static_cast<float>(HS));
  const dim3 grid((T + kTile - 1) / kTile, B * NH);
  attention_forward_kernel<HS>
      <<<grid, kThreads, smem, ctx.stream>>>(out, lse, qkv, T, NH, scale_log2);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_attention_forward(CudaContext& ctx, bf16* out, float* lse, const bf16* qkv, int B,
                              int T, int C, int NH) {
  if (B == 0 || T == 0) return;
  if (!aligned_to(qkv, 16) || !aligned_to(out, 16))
    throw std::runtime_error("attention_forward: qkv and out must be 16-byte aligned");
  if (B * NH > 65535)
    throw std::runtime_error("attention_forward: B * NH = " + std::to_string(B * NH) +
                             " exceeds the grid limit 65535");
  switch (C / NH) {
    case 32: launch<32>(ctx, out, lse, qkv, B, T, NH); break;
    case 64: launch<64>(ctx, out, lse, qkv, B, T, NH); break;
    case 128: launch<128>(ctx, out, lse, qkv, B, T, NH); break;
    default:
      throw std::runtime_error("attention_forward: head size C/NH = " + std::to_string(C / NH) +
                               " is not supported (32, 64 or 128)");
  }
}

}  // namespace zt
