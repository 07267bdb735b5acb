// Causal flash-attention backward, bf16 tensor cores, deterministic (no atomics).
//
// Same layouts as the forward (qkv[B,T,3C], dout/out[B,T,C], lse[B,NH,T]);
// dqkv[B,T,3C] is written, every element of rows < T.
//
// Three kernels:
//  1. D[b,h,t] = rowsum(dO * O) per query row (fp32 scratch).
//  2. dK, dV: one block per (64-key tile, batch*head); each warp owns 16 keys
//     and keeps their dK, dV in registers for the whole pass. Q, dO, lse and D
//     tiles of 64 queries (from the diagonal tile to the end) stream through
//     double-buffered shared memory. Per 16-query chunk the warp recomputes
//     S^T = K Q^T, P^T = exp(S^T - lse), dP^T = V dO^T, dS^T = P^T (dP^T - D),
//     then dV += P^T dO and dK += dS^T Q.
//  3. dQ: one block per (64-query tile, batch*head); each warp owns 16 queries;
//     K/V tiles up to the diagonal stream through shared memory. Per 16-key
//     chunk: S = Q K^T, P, dP = dO V^T, dS, then dQ += dS K.
// Each gradient element is summed by one thread in a fixed order, so results are
// bit-identical between runs; the price is recomputing S and dP in kernel 3.
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "model/cuda/attention_common.cuh"
#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

using namespace attn;

// D = rowsum(dO * O). Rows are (b, t, h) in memory order; HS/8 consecutive
// lanes share one row (16 bytes each) and combine with shuffles.
template <int HS>
__global__ void attention_backward_preprocess_kernel(float* D, const bf16* dout, const bf16* out,
                                                     int B, int T, int NH) {
  constexpr int L = HS / 8;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t rows = static_cast<size_t>(B) * T * NH;
  const size_t row = idx / L;
  const int ch = static_cast<int>(idx % L);
  float acc = 0.f;
  if (row < rows) {
    float a[8], o[8];
    load_bf16<8>(a, dout + row * HS + ch * 8);
    load_bf16<8>(o, out + row * HS + ch * 8);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc += a[i] * o[i];
  }
#pragma unroll
  for (int off = L / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (row < rows && ch == 0) {
    const int h = static_cast<int>(row % NH);
    const int t = static_cast<int>((row / NH) % T);
    const int b = static_cast<int>(row / (static_cast<size_t>(NH) * T));
    D[(static_cast<size_t>(b) * NH + h) * T + t] = acc;
  }
}

// A fragments of a warp's 16 rows of a shared tile: held in registers for the
// whole kernel when IN_REGS, re-read from shared memory on each use otherwise
// (head size 128, where registers are needed for the accumulators).
template <int HS, bool IN_REGS>
struct RowFragments {
  uint32_t f[HS / 16][4];
  __device__ void init(const bf16* tile, int row0, int lane) {
#pragma unroll
    for (int ks = 0; ks < HS / 16; ++ks)
      load_a(f[ks], tile, smem_stride<HS>(), row0, ks * 16, lane);
  }
  __device__ void get(uint32_t (&a)[4], int ks) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = f[ks][i];
  }
};

template <int HS>
struct RowFragments<HS, false> {
  const bf16* tile;
  int row0, lane;
  __device__ void init(const bf16* t, int r, int l) {
    tile = t;
    row0 = r;
    lane = l;
  }
  __device__ void get(uint32_t (&a)[4], int ks) const {
    load_a(a, tile, smem_stride<HS>(), row0, ks * 16, lane);
  }
};

template <int HS>
constexpr size_t dkdv_smem_bytes() {
  return static_cast<size_t>(6) * kTile * smem_stride<HS>() * sizeof(bf16) +
         4 * kTile * sizeof(float);  // K, V, 2 Q, 2 dO; 2 lse, 2 D
}

template <int HS>
constexpr size_t dq_smem_bytes() {
  return static_cast<size_t>(6) * kTile * smem_stride<HS>() * sizeof(bf16);  // Q, dO, 2 K, 2 V
}

template <int HS>
__global__ void __launch_bounds__(kThreads)
    attention_backward_dkdv_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse,
                                   const float* D, int T, int NH, float scale_log2, float scale) {
  constexpr int S = smem_stride<HS>();
  constexpr int KS = HS / 16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);
  bf16* sV = sK + kTile * S;
  bf16* sQ = sV + kTile * S;                                  // [2][kTile][S]
  bf16* sdO = sQ + 2 * kTile * S;                             // [2][kTile][S]
  float* sL = reinterpret_cast<float*>(sdO + 2 * kTile * S);  // [2][kTile], lse
  float* sD = sL + 2 * kTile;                                 // [2][kTile]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int num_tiles = (T + kTile - 1) / kTile;
  const int kv_tile = blockIdx.x;
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
  const int C = NH * HS;
  const size_t row_stride = 3 * static_cast<size_t>(C);
  const bf16* q_base = qkv + static_cast<size_t>(b) * T * row_stride + h * HS;
  const bf16* do_base = dout + static_cast<size_t>(b) * T * C + h * HS;
  const float* lse_row = lse + static_cast<size_t>(bh) * T;
  const float* d_row = D + static_cast<size_t>(bh) * T;
  const int k0 = kv_tile * kTile;

  auto load_query_side = [&](int i, int buf) {
    load_tile_async<HS>(sQ + buf * kTile * S, q_base, row_stride, i * kTile, T);
    load_tile_async<HS>(sdO + buf * kTile * S, do_base, C, i * kTile, T);
    for (int t = threadIdx.x; t < kTile; t += kThreads) {
      const int row = i * kTile + t;
      const bool valid = row < T;
      cp_async_4(sL + buf * kTile + t, lse_row + (valid ? row : 0), valid);
      cp_async_4(sD + buf * kTile + t, d_row + (valid ? row : 0), valid);
    }
  };
  load_tile_async<HS>(sK, q_base + C, row_stride, k0, T);
  load_tile_async<HS>(sV, q_base + 2 * C, row_stride, k0, T);
  load_query_side(kv_tile, 0);
  cp_async_commit();

  RowFragments<HS, (HS <= 64)> kf, vf;
  float dk[HS / 8][4] = {}, dv[HS / 8][4] = {};
  const int key_a = k0 + warp * 16 + g;  // this thread's keys: key_a and key_a + 8

  for (int i = kv_tile; i < num_tiles; ++i) {
    const int buf = (i - kv_tile) % 2;
    if (i + 1 < num_tiles) {
      load_query_side(i + 1, 1 - buf);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (i == kv_tile) {
      kf.init(sK, warp * 16, lane);
      vf.init(sV, warp * 16, lane);
    }
    const bf16* tQ = sQ + buf * kTile * S;
    const bf16* tdO = sdO + buf * kTile * S;
    const float* tL = sL + buf * kTile;
    const float* tD = sD + buf * kTile;
    // Only the diagonal tile and a ragged last tile have masked entries.
    const bool need_mask = i == kv_tile || (i + 1) * kTile > T;

#pragma unroll
    for (int qc = 0; qc < kTile / 16; ++qc) {
      float st[2][4] = {}, dpt[2][4] = {};
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        uint32_t a[4], qb[4], ob[4];
        kf.get(a, ks);
        load_b_rows(qb, tQ, S, qc * 16, ks * 16, lane);
        mma_bf16(st[0], a, qb[0], qb[1]);
        mma_bf16(st[1], a, qb[2], qb[3]);
        vf.get(a, ks);
        load_b_rows(ob, tdO, S, qc * 16, ks * 16, lane);
        mma_bf16(dpt[0], a, ob[0], ob[1]);
        mma_bf16(dpt[1], a, ob[2], ob[3]);
      }
      // st[nb][e]: key key_a (+8 for e >= 2), local query qc*16 + nb*8 + 2q + (e & 1).
      float ds[2][4];
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ql = qc * 16 + nb * 8 + 2 * q + (e & 1);
          const int query = i * kTile + ql;
          const int key = key_a + (e >= 2 ? 8 : 0);
          float p = exp2f(st[nb][e] * scale_log2 - tL[ql] * kLog2e);
          if (need_mask && (key > query || query >= T)) p = 0.f;
          st[nb][e] = p;
          ds[nb][e] = p * (dpt[nb][e] - tD[ql]);
        }
      }
      const uint32_t pa[4] = {pack_bf16(st[0][0], st[0][1]), pack_bf16(st[0][2], st[0][3]),
                              pack_bf16(st[1][0], st[1][1]), pack_bf16(st[1][2], st[1][3])};
      const uint32_t dsa[4] = {pack_bf16(ds[0][0], ds[0][1]), pack_bf16(ds[0][2], ds[0][3]),
                               pack_bf16(ds[1][0], ds[1][1]), pack_bf16(ds[1][2], ds[1][3])};
#pragma unroll
      for (int n2 = 0; n2 < HS / 16; ++n2) {
        uint32_t ob[4], qb[4];
        load_b_cols(ob, tdO, S, qc * 16, n2 * 16, lane);
        mma_bf16(dv[2 * n2], pa, ob[0], ob[1]);
        mma_bf16(dv[2 * n2 + 1], pa, ob[2], ob[3]);
        load_b_cols(qb, tQ, S, qc * 16, n2 * 16, lane);
        mma_bf16(dk[2 * n2], dsa, qb[0], qb[1]);
        mma_bf16(dk[2 * n2 + 1], dsa, qb[2], qb[3]);
      }
    }
    __syncthreads();  // the next iteration's prefetch overwrites this buffer
  }

  // Stage through the warp's own rows of sK / sV (only this warp read them).
  bf16* dst = dqkv + static_cast<size_t>(b) * T * row_stride + h * HS;
  store_rows<HS>(dst + C, row_stride, k0, T, dk, scale, sK, warp, lane);
  store_rows<HS>(dst + 2 * C, row_stride, k0, T, dv, 1.f, sV, warp, lane);
}

template <int HS>
__global__ void __launch_bounds__(kThreads)
    attention_backward_dq_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse,
                                 const float* D, int T, int NH, float scale_log2, float scale) {
  constexpr int S = smem_stride<HS>();
  constexpr int KS = HS / 16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sdO = sQ + kTile * S;
  bf16* sK = sdO + kTile * S;     // [2][kTile][S]
  bf16* sV = sK + 2 * kTile * S;  // [2][kTile][S]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int num_tiles = (T + kTile - 1) / kTile;
  const int q_tile = num_tiles - 1 - blockIdx.x;  // heaviest first
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
  const int C = NH * HS;
  const size_t row_stride = 3 * static_cast<size_t>(C);
  const bf16* q_base = qkv + static_cast<size_t>(b) * T * row_stride + h * HS;
  const bf16* k_base = q_base + C;
  const bf16* v_base = q_base + 2 * C;
  const int q0 = q_tile * kTile;

  load_tile_async<HS>(sQ, q_base, row_stride, q0, T);
  load_tile_async<HS>(sdO, dout + static_cast<size_t>(b) * T * C + h * HS, C, q0, T);
  load_tile_async<HS>(sK, k_base, row_stride, 0, T);
  load_tile_async<HS>(sV, v_base, row_stride, 0, T);
  cp_async_commit();

  // This thread's query rows row_a and row_a + 8, their lse (log2 domain) and D.
  const int row_a = q0 + warp * 16 + g;
  float lse2[2], dr[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row_a + 8 * half;
    const bool valid = row < T;
    lse2[half] = valid ? lse[static_cast<size_t>(bh) * T + row] * kLog2e : 0.f;
    dr[half] = valid ? D[static_cast<size_t>(bh) * T + row] : 0.f;
  }

  uint32_t qf[KS][4], of[KS][4];
  float dq[HS / 8][4] = {};
  for (int j = 0; j <= q_tile; ++j) {
    const int buf = j % 2;
    if (j + 1 <= q_tile) {
      load_tile_async<HS>(sK + (1 - buf) * kTile * S, k_base, row_stride, (j + 1) * kTile, T);
      load_tile_async<HS>(sV + (1 - buf) * kTile * S, v_base, row_stride, (j + 1) * kTile, T);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        load_a(qf[ks], sQ, S, warp * 16, ks * 16, lane);
        load_a(of[ks], sdO, S, warp * 16, ks * 16, lane);
      }
    }
    const bf16* tK = sK + buf * kTile * S;
    const bf16* tV = sV + buf * kTile * S;
    // Keys past the query (and, for queries < T, keys >= T) only on the diagonal.
    const bool diagonal = j == q_tile;

#pragma unroll
    for (int kc = 0; kc < kTile / 16; ++kc) {
      float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        uint32_t kb[4], vb[4];
        load_b_rows(kb, tK, S, kc * 16, ks * 16, lane);
        mma_bf16(s[0], qf[ks], kb[0], kb[1]);
        mma_bf16(s[1], qf[ks], kb[2], kb[3]);
        load_b_rows(vb, tV, S, kc * 16, ks * 16, lane);
        mma_bf16(dp[0], of[ks], vb[0], vb[1]);
        mma_bf16(dp[1], of[ks], vb[2], vb[3]);
      }
      // s[nb][e]: query row_a (+8 for e >= 2), key j*64 + kc*16 + nb*8 + 2q + (e & 1).
      float ds[2][4];
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int half = e >= 2 ? 1 : 0;
          const int key = j * kTile + kc * 16 + nb * 8 + 2 * q + (e & 1);
          float p = exp2f(s[nb][e] * scale_log2 - lse2[half]);
          if (diagonal && key > row_a + 8 * half) p = 0.f;
          ds[nb][e] = p * (dp[nb][e] - dr[half]);
        }
      }
      const uint32_t dsa[4] = {pack_bf16(ds[0][0], ds[0][1]), pack_bf16(ds[0][2], ds[0][3]),
                               pack_bf16(ds[1][0], ds[1][1]), pack_bf16(ds[1][2], ds[1][3])};
#pragma unroll
      for (int n2 = 0; n2 < HS / 16; ++n2) {
        uint32_t kb[4];
        load_b_cols(kb, tK, S, kc * 16, n2 * 16, lane);
        mma_bf16(dq[2 * n2], dsa, kb[0], kb[1]);
        mma_bf16(dq[2 * n2 + 1], dsa, kb[2], kb[3]);
      }
    }
    __syncthreads();  // the next iteration's prefetch overwrites this buffer
  }
  // Stage through the warp's own rows of sQ (only this warp read them).
  store_rows<HS>(dqkv + static_cast<size_t>(b) * T * row_stride + h * HS, row_stride, q0, T, dq,
                 scale, sQ, warp, lane);
}

template <typename Kernel>
void allow_smem(Kernel kernel, size_t bytes, const CudaContext& ctx, int hs) {
  if (bytes > ctx.max_smem_per_block)
    throw std::runtime_error("attention_backward: head size " + std::to_string(hs) +
                             " needs more shared memory than the device allows");
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
}

template <int HS>
void launch(CudaContext& ctx, bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out,
            const float* lse, int B, int T, int NH) {
  float* D = static_cast<float*>(
      ctx.scratch->get(static_cast<size_t>(B) * NH * T * sizeof(float), ctx.stream));
  const size_t threads = static_cast<size_t>(B) * T * NH * (HS / 8);
  attention_backward_preprocess_kernel<HS>
      <<<static_cast<unsigned>(ceil_div(threads, size_t{256})), 256, 0, ctx.stream>>>(D, dout, out,
                                                                                      B, T, NH);
  CUDA_CHECK_LAUNCH();

  const float scale = 1.f / std::sqrt(static_cast<float>(HS));
  const float scale_log2 = scale * kLog2e;
  const dim3 grid((T + kTile - 1) / kTile, B * NH);
  allow_smem(attention_backward_dkdv_kernel<HS>, dkdv_smem_bytes<HS>(), ctx, HS);
  attention_backward_dkdv_kernel<HS><<<grid, kThreads, dkdv_smem_bytes<HS>(), ctx.stream>>>(
      dqkv, dout, qkv, lse, D, T, NH, scale_log2, scale);
  CUDA_CHECK_LAUNCH();
  allow_smem(attention_backward_dq_kernel<HS>, dq_smem_bytes<HS>(), ctx, HS);
  attention_backward_dq_kernel<HS><<<grid, kThreads, dq_smem_bytes<HS>(), ctx.stream>>>(
      dqkv, dout, qkv, lse, D, T, NH, scale_log2, scale);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_attention_backward(CudaContext& ctx, bf16* dqkv, const bf16* dout, const bf16* qkv,
                               const bf16* out, const float* lse, int B, int T, int C, int NH) {
  if (B == 0 || T == 0) return;
  if (!aligned_to(qkv, 16) || !aligned_to(dqkv, 16) || !aligned_to(dout, 16) ||
      !aligned_to(out, 16))
    throw std::runtime_error("attention_backward: qkv, dqkv, dout and out must be 16-byte aligned");
  if (B * NH > 65535)
    throw std::runtime_error("attention_backward: B * NH = " + std::to_string(B * NH) +
                             " exceeds the grid limit 65535");
  switch (C / NH) {
    case 32: launch<32>(ctx, dqkv, dout, qkv, out, lse, B, T, NH); break;
    case 64: launch<64>(ctx, dqkv, dout, qkv, out, lse, B, T, NH); break;
    case 128: launch<128>(ctx, dqkv, dout, qkv, out, lse, B, T, NH); break;
    default:
      throw std::runtime_error("attention_backward: head size C/NH = " + std::to_string(C / NH) +
                               " is not supported (32, 64 or 128)");
  }
}

}  // namespace zt
